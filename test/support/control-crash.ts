import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { expect } from "vitest";
import type { PipelineEvent } from "../../src/compiler/pipeline-context.js";
import type { AuditEvent } from "../../src/events/audit.js";
import type { ControlRequest, Requester } from "../../src/runtime/live-control.js";
import { crashProject, type Life, live } from "./crash-runs.js";

const CHILD = resolve(import.meta.dirname, "crash-child.mjs");

type Awaitable<T> = T | Promise<T>;

/** What the scenario reads and writes of a store, SQLite or PostgreSQL. */
export interface ControlledStore {
  enqueueControl(
    runId: string,
    request: { event: PipelineEvent; requester: Requester; timeoutMs: number },
  ): Awaitable<ControlRequest>;
  controlRequest(id: number): Awaitable<ControlRequest | undefined>;
  auditOf(runId: string): Awaitable<AuditEvent[]>;
}

export interface ControlCrash {
  /** The request as the killed owner left it. */
  afterKill: ControlRequest | undefined;
  killed: Life;
  /** Once the run was resumed by another process (only if the request was still pending). */
  resumed?: Life;
  settled?: ControlRequest;
  audit?: AuditEvent[];
}

/**
 * A run whose plan stage waits a minute on its model is started in a child process and killed;
 * a control request is queued for it by someone no longer waiting (a requester long gone), and
 * a second child resumes the run, takes that request and is SIGKILLed the instant it stores the
 * step that applies it; a third resumes it again. `store` is `storeSpec`'s store, opened by the test.
 * The children run the built package: `npm run build` first.
 */
export async function killedWhileApplyingControl(
  storeSpec: (dir: string) => string,
  store: (dir: string) => Promise<ControlledStore>,
  event: PipelineEvent,
): Promise<ControlCrash> {
  const dir = crashProject();
  writeFileSync(
    join(dir, "control.yaml"),
    `id: control
context: { type: object, properties: { task: { type: string } } }
entry: plan
stages:
  plan: { file: stages/plan.md }
`,
  );
  writeFileSync(
    join(dir, "control.script.yaml"),
    "stages:\n  plan:\n    - { text: thinking, delayMs: 60000 }\n",
  );
  const spec = storeSpec(dir);
  const child = (mode: string) => ({
    script: CHILD,
    child: [
      mode,
      spec,
      "ctl-1",
      join(dir, "control.yaml"),
      join(dir, "control.script.yaml"),
    ].concat([dir, join(dir, "models.log")]),
  });
  await live(child("start"), { afterEvents: 1, delayMs: 200 });
  const opened = await store(dir);
  const requester = { pid: 1, host: "gone.example", user: "ops" };
  const { id } = await opened.enqueueControl("ctl-1", {
    event,
    requester,
    timeoutMs: 10 * 60_000,
  });
  const killed = await live(child("resume-killed-at-control"));
  const afterKill = await opened.controlRequest(id);
  // A request already settled would never be applied: the resumed run would wait its minute.
  if (afterKill?.status !== "taken") return { afterKill, killed };
  const resumed = await live(child("resume"));
  return {
    afterKill,
    killed,
    resumed,
    settled: await opened.controlRequest(id),
    audit: await opened.auditOf("ctl-1"),
  };
}

/**
 * What a CANCEL taken by an owner SIGKILLed as it stored the step applying it must leave: the
 * request still `taken`, then applied exactly once by the resumed run, its log gapless.
 */
export function expectCancelAppliedOnce(crash: ControlCrash): void {
  expect(crash.killed.code).toBeNull();
  expect(crash.afterKill?.status).toBe("taken");
  expect(crash.resumed?.result?.status).toBe("cancelled");
  expect(crash.settled?.status).toBe("applied");
  const audit = crash.audit ?? [];
  const types = audit.map((event) => event.type);
  expect(types.filter((type) => type === "ControlRequested")).toHaveLength(1);
  expect(types.filter((type) => type === "RunCancelled")).toHaveLength(1);
  expect(audit.map((event) => event.seq)).toEqual(audit.map((_, i) => i + 1));
}
