export * from "./compiler/index.js";
export * from "./definitions/index.js";
export * from "./errors.js";
export * from "./inspect/audit.js";
export * from "./models/index.js";
export * from "./runtime/index.js";
export * from "./store/index.js";
export * from "./tools/index.js";
