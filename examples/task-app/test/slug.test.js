import assert from "node:assert/strict";
import { test } from "node:test";
import { slugify } from "../src/slug.js";

test("slugify lowercases words and joins them with hyphens", () => {
  assert.equal(slugify("Hello World"), "hello-world");
  assert.equal(slugify("  Ship  it now "), "ship-it-now");
});
