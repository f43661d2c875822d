import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Scale and soak cases run under `npm run test:long` (vitest.long.config.ts), which CI runs too.
    exclude: [...configDefaults.exclude, "test/**/*.long.test.ts"],
    // Generous: CI machines are shared, and property tests do hundreds of loads per test.
    testTimeout: 60_000,
  },
});
