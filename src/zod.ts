import { config } from "zod/mini";
import en from "zod/v4/locales/en.js";

/**
 * zod as stagechart declares every schema: the functional build (`zod/mini`), with English
 * messages; import it as a namespace (`import * as z from "../zod.js"`). A classic zod schema
 * carries some forty methods built for it when it is made, and the classic module is 390 kB;
 * the functional one is bundled with only the functions called, so a command that only checks
 * definitions (`validate`) starts without loading or building what it never uses.
 */
config(en());

export * from "zod/mini";
