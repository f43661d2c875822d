import { StagechartError } from "../errors.js";
import * as z from "../zod.js";

/** A store row that is not what was written there: `Session/StoreCorrupt`, naming the row. */
export const storeCorrupt = (what: string, context: Record<string, unknown>): StagechartError =>
  new StagechartError("Session/StoreCorrupt", `the store is damaged: ${what}`, context);

/** A stored row's JSON text back as a value of `shape`; anything else is `Session/StoreCorrupt`. */
export function decodeRow<T>(
  text: string,
  shape: z.core.$ZodType<T>,
  what: string,
  context: Record<string, unknown>,
): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw storeCorrupt(`${what} is not valid JSON`, context);
  }
  const checked = z.safeParse(shape, value);
  if (!checked.success) throw storeCorrupt(`${what} is not what was written there`, context);
  return checked.data;
}
