export * from "./definitions/index.js";
export * from "./errors.js";
