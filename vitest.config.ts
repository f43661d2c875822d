import { availableParallelism } from "node:os";
import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Scale and soak cases run under `npm run test:long` (vitest.long.config.ts), which CI runs too.
    exclude: [...configDefaults.exclude, "test/**/*.long.test.ts"],
    // One temporary directory for the whole suite, removed at its end (test/support/suite-temp.ts).
    globalSetup: ["test/support/suite-temp.ts"],
    // Vitest's default is one worker fewer than the cores: one on a 2-core machine. Most files
    // here wait on child processes, servers and timers, so two run side by side even on two cores
    // (the suite's wall time 400 s → 287 s on a loaded 2-core machine).
    maxWorkers: Math.min(4, Math.max(2, availableParallelism())),
    // Generous: CI machines are shared, and property tests do hundreds of loads per test.
    testTimeout: 60_000,
    // Every snapshot patch a store writes is checked against the snapshot's JSON (the patches
    // compare by identity, which an object changed in place after a commit would defeat); the
    // CLI processes tests spawn inherit it.
    env: { STAGECHART_CHECK_SNAPSHOT_PATCHES: "1" },
  },
});
