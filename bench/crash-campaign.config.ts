import { defineConfig } from "vitest/config";

/** The crash campaign (bench/crash-campaign.ts) on its own: minutes long, never in `npm test`. */
export default defineConfig({
  test: { include: ["bench/crash-campaign.ts"] },
});
