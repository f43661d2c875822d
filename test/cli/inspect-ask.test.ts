import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DECIDING } from "../support/ask-pipelines.js";
import { runCli, summaryOf } from "../support/cli.js";
import { startInspect } from "../support/inspect-cli.js";
import { tempDir } from "../support/stages.js";

describe("stagechart inspect, answering a suspended run's ask stage from its page", () => {
  it("resumes the run with the answer, as run --inspect's page does", async () => {
    const dir = tempDir();
    const store = join(dir, "runs.db");
    writeFileSync(join(dir, "deciding.yaml"), DECIDING);
    writeFileSync(join(dir, "deciding.script.yaml"), "stages: {}\n");
    const ran = await runCli(
      ...["run", join(dir, "deciding.yaml"), "--root", dir, "--store", store],
      ...["--run-id", "parked", "--headless", "--json"],
    );
    expect(summaryOf(ran.stdout).status).toBe("suspended");

    const inspect = startInspect("--port", "0", "--store", store);
    try {
      const origin = new URL(await inspect.url).origin;
      const answered = await fetch(
        `${origin}/api/v1/runs/parked/asks/${encodeURIComponent("parked/decide/1")}`,
        { method: "POST", body: JSON.stringify({ value: { decision: "accepted" } }) },
      );
      expect(await answered.json()).toEqual({ answered: "resumed" });
      const statusOf = async () =>
        ((await (await fetch(`${origin}/api/v1/runs/parked`)).json()) as { status: string }).status;
      await expect.poll(statusOf, { timeout: 20_000 }).toBe("done");
    } finally {
      process.emit("SIGINT");
      expect(await inspect.exit).toBe(0);
    }
  }, 30_000);
});
