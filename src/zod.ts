import { config, memoizer } from "zod/mini";
import en from "zod/v4/locales/en.js";

/**
 * zod as stagechart declares every schema: the functional build (`zod/mini`), set up as zod's
 * classic build sets itself up; import it as a namespace (`import * as z from "../zod.js"`). A
 * classic zod schema carries some forty methods built for it when it is made, and the classic
 * module is 390 kB, which a command that only checks definitions (`validate`) never loads. What
 * stagechart calls is listed here.
 *
 * zod's settings are one object for every copy of zod in the process, so each is set only when
 * unset, as classic zod does: an embedding application's own locale and settings stand.
 * English messages; and the memoizer, which makes a value that contains itself an issue
 * instead of a stack overflow.
 */
if (!config().localeError) config(en());
if (!config().memoizer) config({ memoizer: memoizer() });

export type { core, infer, output, ZodMiniType } from "zod/mini";
export {
  array,
  boolean,
  custom,
  discriminatedUnion,
  enum,
  extend,
  gt,
  gte,
  int,
  json,
  lazy,
  literal,
  looseObject,
  lte,
  minLength,
  NEVER,
  number,
  object,
  optional,
  pipe,
  record,
  refine,
  regex,
  safeParse,
  strictObject,
  string,
  superRefine,
  transform,
  trim,
  union,
  unknown,
} from "zod/mini";
export { $ZodCyclicError } from "zod/v4/core";
