import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DECIDING } from "../support/ask-pipelines.js";
import { runCli, summaryOf } from "../support/cli.js";
import { tempDir } from "../support/stages.js";

/** decide (a person picks), then, when accepted, confirm (a person says who ships it). */
const ASKING = DECIDING.replace("id: deciding", "id: asking")
  .replace(
    "next:",
    `  confirm:
    ask:
      prompt: Who ships it?
      schema: { type: object, required: [by], properties: { by: { type: string } } }
next:`,
  )
  .replace("equals: accepted }, to: done }", "equals: accepted }, to: confirm }");

function askingProject() {
  const dir = tempDir();
  writeFileSync(join(dir, "asking.yaml"), ASKING);
  writeFileSync(join(dir, "asking.script.yaml"), "stages: {}\n");
  return { dir, pipeline: join(dir, "asking.yaml"), store: join(dir, "runs.db") };
}

const startAsking = (project: ReturnType<typeof askingProject>) =>
  runCli(
    "run",
    project.pipeline,
    "--headless",
    "--root",
    project.dir,
    "--store",
    project.store,
    "--run-id",
    "ask-1",
    "--json",
  );

const resumeWith = (project: ReturnType<typeof askingProject>, input: string) =>
  runCli("resume", "ask-1", "--input", input, "--store", project.store, "--headless", "--json");

describe("stagechart and ask stages", () => {
  it("suspends at an ask, says how to answer, and goes on with each valid answer", async () => {
    const project = askingProject();
    const started = await startAsking(project);
    expect(started.code).toBe(3);
    expect(summaryOf(started.stdout)).toMatchObject({
      status: "suspended",
      waiting: [{ kind: "input", stageId: "decide", prompt: "Accept the change?" }],
    });
    expect(started.stderr).toContain(
      "waiting: decide asks: Accept the change? — stagechart resume ask-1 --input '<json>'",
    );

    const shown = await runCli("show", "ask-1", "--store", project.store);
    expect(shown.stdout).toContain("waiting: decide asks: Accept the change?");

    const decided = await resumeWith(project, '{"decision":"accepted"}');
    expect(decided.code).toBe(3);
    expect(summaryOf(decided.stdout)).toMatchObject({
      status: "suspended",
      waiting: [{ kind: "input", stageId: "confirm" }],
    });

    const confirmed = await resumeWith(project, '{"by":"alice"}');
    expect(confirmed.code).toBe(0);
    expect(summaryOf(confirmed.stdout)).toMatchObject({ status: "done", output: { by: "alice" } });
    const audit = JSON.parse(
      (await runCli("audit", "ask-1", "--json", "--store", project.store)).stdout,
    ) as { type: string; stageId?: string; payload: Record<string, unknown> }[];
    expect(audit.filter((e) => e.type === "InputAnswered")).toMatchObject([
      { stageId: "decide", payload: { value: { decision: "accepted" }, by: "command line" } },
      { stageId: "confirm", payload: { value: { by: "alice" }, by: "command line" } },
    ]);
  });

  it("refuses an invalid answer with its code, exit 1, and the run stays suspended", async () => {
    const project = askingProject();
    await startAsking(project);
    const refused = await resumeWith(project, '{"decision":"maybe"}');
    expect(refused.code).toBe(1);
    expect(summaryOf(refused.stdout)).toMatchObject({
      status: "suspended",
      error: { code: "Validation/InputInvalid" },
    });
    expect(refused.stderr).toContain("Validation/InputInvalid");
    expect(refused.stderr).toContain("/decision must be equal to one of the allowed values");
    const runs = JSON.parse((await runCli("runs", "--json", "--store", project.store)).stdout);
    expect(runs).toMatchObject([{ runId: "ask-1", status: "suspended" }]);

    const rejected = await resumeWith(project, '{"decision":"rejected"}');
    expect(rejected.code).toBe(1);
    expect(summaryOf(rejected.stdout)).toMatchObject({ status: "failed" });
  });

  it("forks a run waiting at its ask, answering the fork otherwise; the source still waits", async () => {
    const project = askingProject();
    await startAsking(project);
    const steps = JSON.parse(
      (await runCli("history", "ask-1", "--json", "--store", project.store)).stdout,
    ) as { step: number; status: string }[];
    const waiting = steps.at(-1);
    expect(waiting?.status).toBe("suspended");
    const fork = await runCli(
      "fork",
      "ask-1",
      "--at",
      String(waiting?.step),
      "--run-id",
      "ask-2",
      "--input",
      '{"decision":"rejected"}',
      "--store",
      project.store,
      "--headless",
      "--json",
    );
    expect(fork.code).toBe(1);
    expect(summaryOf(fork.stdout)).toMatchObject({ runId: "ask-2", status: "failed" });
    const runs = JSON.parse((await runCli("runs", "--json", "--store", project.store)).stdout);
    expect(runs).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ runId: "ask-1", status: "suspended" }),
        expect.objectContaining({ runId: "ask-2", status: "failed" }),
      ]),
    );
    expect((await resumeWith(project, '{"decision":"accepted"}')).code).toBe(3);
  });

  it("draws, generates paths from the schema and drives each, the unanswered ones suspending", async () => {
    const project = askingProject();
    expect((await runCli("graph", project.pipeline)).code).toBe(0);
    const report = JSON.parse((await runCli("test", project.pipeline, "--json")).stdout) as {
      failed: number;
      paths: { expected: { end: string } }[];
    };
    expect(report.failed).toBe(0);
    expect(report.paths.map((p) => p.expected.end).sort()).toEqual([
      "done",
      "failed",
      "suspended",
      "suspended",
    ]);
  });
});

/** A project whose ask stage times out after 1 s, taking the answer `accepted`. */
function timedProject() {
  const dir = tempDir();
  const pipeline = join(dir, "timed.yaml");
  writeFileSync(
    pipeline,
    DECIDING.replace("id: deciding", "id: timed").replace(
      "        additionalProperties: false\n",
      "        additionalProperties: false\n      timeout: { after: 1, fallback: { answer: { decision: accepted } } }\n",
    ),
  );
  writeFileSync(join(dir, "timed.script.yaml"), "stages: {}\n");
  return { dir, pipeline, store: join(dir, "runs.db") };
}

describe("stagechart and an ask stage with a deadline", () => {
  it("suspends with the deadline shown; a resume after it takes the fallback at once, audited once", async () => {
    const { dir, pipeline, store } = timedProject();
    const started = await runCli(
      ...["run", pipeline, "--headless", "--root", dir, "--store", store],
      ...["--run-id", "timed-1", "--json"],
    );
    expect(started.code).toBe(3);
    const waiting = summaryOf(started.stdout).waiting as { deadline: string }[];
    const deadline = waiting[0]?.deadline as string;
    expect(started.stderr).toContain(
      `waiting: decide asks: Accept the change? (answer by ${deadline})`,
    );

    // The process has ended; the deadline is the stored run's.
    await new Promise((resolve) => setTimeout(resolve, Date.parse(deadline) - Date.now() + 50));
    const resumed = await runCli("resume", "timed-1", "--store", store, "--headless", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(summaryOf(resumed.stdout)).toMatchObject({
      status: "done",
      output: { decision: "accepted" },
    });
    const audit = JSON.parse(
      (await runCli("audit", "timed-1", "--json", "--store", store)).stdout,
    ) as {
      type: string;
      payload: Record<string, unknown>;
    }[];
    expect(audit.filter((e) => e.type === "WaitTimedOut")).toMatchObject([
      { payload: { kind: "ask", deadline, fallback: "answer" } },
    ]);
    expect(audit.find((e) => e.type === "InputAnswered")?.payload).toMatchObject({
      by: "deadline",
    });
  });

  it("queued and parked by a worker, is woken by a worker once its deadline passes, nobody resuming it", async () => {
    const { dir, pipeline, store } = timedProject();
    const queued = await runCli(
      ...["run", pipeline, "--detach", "--root", dir, "--store", store, "--run-id", "timed-w"],
    );
    expect(queued.code, queued.stderr).toBe(0);
    const worker = ["worker", "--until-idle", "--store", store, "--poll", "50"];
    expect((await runCli(...worker)).code).toBe(0);
    const parked = JSON.parse((await runCli("show", "timed-w", "--json", "--store", store)).stdout);
    expect(parked).toMatchObject({ status: "suspended", wakeAt: expect.any(String) });
    expect((await runCli("show", "timed-w", "--store", store)).stdout).toContain(
      `wakes at ${parked.wakeAt}: a worker resumes it then`,
    );
    // Before its deadline a worker leaves it parked; after it, a worker takes it and the
    // timeout's fallback answers.
    await new Promise((resolve) =>
      setTimeout(resolve, Date.parse(parked.wakeAt) - Date.now() + 50),
    );
    expect((await runCli(...worker)).code).toBe(0);
    const woken = JSON.parse((await runCli("show", "timed-w", "--json", "--store", store)).stdout);
    expect(woken).toMatchObject({ status: "done", output: { decision: "accepted" } });
    expect(woken.wakeAt).toBeUndefined();
  });
});
