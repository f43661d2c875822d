export * from "./script-file.js";
export * from "./scripted.js";
export * from "./spec.js";
export * from "./types.js";
