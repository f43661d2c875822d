import { defineConfig } from "vitest/config";

/** The long cases: growth to thousands of stages, soaks, figures that take minutes to produce. */
export default defineConfig({
  test: {
    include: ["test/**/*.long.test.ts"],
    testTimeout: 30 * 60_000,
    globalSetup: ["test/support/suite-temp.ts"],
  },
});
