import { describe, expect, it } from "vitest";
import { BUILTIN_TOOL_NAMES, builtinTools } from "../../src/tools/index.js";

describe("the built-in tools", () => {
  it("are the tools whose names the definitions layer checks stages against", () => {
    expect(builtinTools().map((tool) => tool.name)).toEqual([...BUILTIN_TOOL_NAMES]);
  });
});
