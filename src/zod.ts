import { config } from "zod/mini";
import en from "zod/v4/locales/en.js";

/**
 * zod as stagechart declares every schema: the functional build (`zod/mini`), with English
 * messages; import it as a namespace (`import * as z from "../zod.js"`). A classic zod schema
 * carries some forty methods built for it when it is made, and the classic module is 390 kB.
 * What stagechart calls is listed here, so that the CLI's bundle holds only that of zod
 * (`scripts/build-cli-bundle.mjs` bundles this module on its own): a command that only checks
 * definitions (`validate`) starts without loading what it never uses.
 */
config(en());

export type { core, infer, output, ZodMiniType } from "zod/mini";
export {
  array,
  boolean,
  custom,
  discriminatedUnion,
  enum,
  extend,
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
  strictObject,
  string,
  superRefine,
  transform,
  trim,
  union,
  unknown,
} from "zod/mini";
