// `node --import ./record-imports.mjs …`: records every import (see import-hooks.mjs).
import { register } from "node:module";

register("./import-hooks.mjs", import.meta.url);
