import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Generous: CI machines are shared, and property tests do hundreds of loads per test.
    testTimeout: 60_000,
  },
});
