export { bundleDefinition, type HashedBundle } from "./collect.js";
export { definitionsCache, loadBundle, materialiseBundle } from "./materialise.js";
