import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { demoProject, REPO_ROOT, runCli, storeOf, summaryOf } from "../support/cli.js";

// The run's owner is the real CLI in a process of its own (the built package: `npm run build`).
const BIN = join(REPO_ROOT, "bin/stagechart.js");

/** Plan's first model turn takes a minute: the run stays live until it is cancelled. */
const SLOW_SCRIPT = `stages:
  plan:
    - { tool: Grep, args: { pattern: auth }, delayMs: 60000 }
`;

const owners: ChildProcess[] = [];
afterEach(() => {
  for (const owner of owners.splice(0)) owner.kill("SIGKILL");
});

/** `stagechart run code-review` on the slow script in another process, once its run is live. */
async function liveOwner(project: string, runId: string): Promise<ChildProcess> {
  const script = join(project, "slow.script.yaml");
  writeFileSync(script, SLOW_SCRIPT);
  const owner = spawn(
    process.execPath,
    [BIN, "run", "code-review", "--task", "rename auth", "--model", `scripted:${script}`].concat([
      "--root",
      project,
      "--store",
      storeOf(project),
      "--run-id",
      runId,
      "--headless",
    ]),
    { stdio: "ignore" },
  );
  owners.push(owner);
  await until(() => {
    if (!existsSync(storeOf(project))) return false;
    const store = openStore(project);
    const live = store.leaseHolder(runId) !== undefined && store.auditOf(runId).length > 3;
    store.close();
    return live;
  });
  return owner;
}

function openStore(project: string): SqliteStore {
  const opened = SqliteStore.open(storeOf(project));
  if (!opened.ok) throw opened.error;
  return opened.value;
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 25));
}

describe("cancel of a run another live process runs", () => {
  it("is delivered through the store and applied by that process, audited with who asked", async () => {
    const project = demoProject();
    const owner = await liveOwner(project, "r1");
    const exited = once(owner, "exit");
    const cancel = await runCli(
      "cancel",
      "r1",
      "--store",
      storeOf(project),
      "--by",
      "ops",
      "--json",
    );
    expect(cancel.code).toBe(0);
    expect(summaryOf(cancel.stdout)).toMatchObject({
      runId: "r1",
      control: "CANCEL",
      outcome: "applied",
    });
    await exited;
    const store = openStore(project);
    expect(store.getRun("r1")).toMatchObject({ ok: true, value: { status: "cancelled" } });
    const audit = store.auditOf("r1");
    expect(audit.find((e) => e.type === "ControlRequested")?.payload).toMatchObject({
      control: { type: "CANCEL" },
      requestedBy: { by: "ops", pid: process.pid },
    });
    expect(audit.at(-1)?.type).toBe("RunCancelled");
    store.close();
  });

  it("an override that process refuses is exit 1 with the reason, and the run goes on", async () => {
    const project = demoProject();
    await liveOwner(project, "r2");
    const override = await runCli(
      "override",
      "r2",
      "--to",
      "nowhere",
      "--reason",
      "why not",
      "--store",
      storeOf(project),
      "--json",
    );
    expect(override.code).toBe(1);
    expect(override.stderr).toMatch(
      /^Session\/IllegalTransition: cannot override from plan to nowhere/,
    );
    expect(summaryOf(override.stdout)).toMatchObject({ runId: "r2", status: "running" });
    const store = openStore(project);
    expect(store.getRun("r2")).toMatchObject({ ok: true, value: { status: "running" } });
    expect(store.auditOf("r2").at(-1)?.type).toBe("RequestRefused");
    store.close();
  });
});

describe("an override of a stored run", () => {
  it("tells the stage it enters why, in that stage's system prompt", async () => {
    const project = demoProject();
    const plan = readFileSync(join(REPO_ROOT, "stages/plan.md"), "utf8");
    for (const id of ["first", "second"])
      writeFileSync(join(project, `${id}.md`), plan.replace("id: plan", `id: ${id}`));
    writeFileSync(
      join(project, "p.yaml"),
      `id: p
context: { type: object, properties: { task: { type: string } } }
entry: first
stages:
  first: { file: ./first.md }
  second: { file: ./second.md }
next:
  first: second
`,
    );
    // first asks for a tool outside its envelope: headless, the run suspends on the grant.
    writeFileSync(
      join(project, "p.script.yaml"),
      `stages:
  first:
    - { tool: Edit, args: { path: src/auth.ts, old: auth, new: authentication } }
  second:
    - { tool: submit_plan, args: { summary: "skipped ahead", steps: [] } }
`,
    );
    const started = await runCli(
      ...["run", join(project, "p.yaml"), "--task", "rename auth", "--run-id", "r5"],
      ...["--root", project, "--store", storeOf(project), "--headless", "--on-grant", "suspend"],
      "--json",
    );
    expect(summaryOf(started.stdout), started.stderr).toMatchObject({ status: "suspended" });
    const reason = "the plan is already agreed with the team";
    const override = await runCli(
      ...["override", "r5", "--to", "second", "--reason", reason],
      ...["--store", storeOf(project), "--json"],
    );
    expect(override.code, override.stderr).toBe(0);
    expect(summaryOf(override.stdout)).toMatchObject({ runId: "r5", status: "done" });
    const store = openStore(project);
    const [system] = store
      .transcriptsOf("r5")
      .filter((row) => row.stageExecutionId === "r5/second/1")
      .map((row) => row.entry);
    store.close();
    expect(system).toMatchObject({ role: "system" });
    expect(system?.role === "system" && system.text).toContain(
      `This stage was entered by an override from stage first. The reason given: ${reason}`,
    );
  });
});

describe("the control commands' options", () => {
  it.each(["0", "-1", "soon"])("--timeout %s is a usage error", async (timeout) => {
    const cancel = await runCli("cancel", "r9", "--timeout", timeout);
    expect(cancel.code).toBe(2);
    expect(cancel.stderr).toContain("--timeout");
  });
});

describe("a killed owner during a pending control request", () => {
  it("the waiting cancel sees the owner gone, withdraws the request and cancels the stored run itself", async () => {
    const project = demoProject();
    const owner = await liveOwner(project, "r3");
    // Frozen, the owner cannot take the request before it is killed.
    owner.kill("SIGSTOP");
    const cancel = runCli("cancel", "r3", "--store", storeOf(project), "--json");
    const store = openStore(project);
    await until(() => store.pendingControls("r3").length === 1);
    const [request] = store.pendingControls("r3");
    owner.kill("SIGKILL");
    await once(owner, "exit");

    const { code, stdout } = await cancel;
    expect(code).toBe(3);
    expect(summaryOf(stdout)).toMatchObject({ runId: "r3", status: "cancelled" });
    expect(store.controlRequest(request?.id as number)).toMatchObject({
      status: "expired",
      error: { code: "Session/ControlExpired" },
    });
    expect(store.getRun("r3")).toMatchObject({ ok: true, value: { status: "cancelled" } });
    store.close();
  });

  it("a request nobody waits for any more is handled by the resume", async () => {
    const project = demoProject();
    const owner = await liveOwner(project, "r4");
    owner.kill("SIGSTOP");
    const store = openStore(project);
    const requester = { pid: 0, host: "ops-box", user: "ops" };
    const { id } = store.enqueueControl("r4", {
      event: { type: "CANCEL", reason: "asked before the crash" },
      requester,
      timeoutMs: 60_000,
    });
    owner.kill("SIGKILL");
    await once(owner, "exit");

    const resumed = await runCli(
      "resume",
      "r4",
      "--store",
      storeOf(project),
      "--headless",
      "--json",
    );
    expect(summaryOf(resumed.stdout)).toMatchObject({ runId: "r4", status: "cancelled" });
    expect(store.controlRequest(id)?.status).toBe("applied");
    const audit = store.auditOf("r4");
    expect(audit.find((e) => e.type === "ControlRequested")?.payload).toMatchObject({
      control: { reason: "asked before the crash" },
      requestedBy: requester,
    });
    store.close();
  });
});
