import type { Command } from "commander";
import type { PipelineEvent } from "../../compiler/pipeline-machine.js";
import type { StagechartError } from "../../errors.js";
import { isLive } from "../../runtime/control.js";
import { type GrantAnswer, resumeRun } from "../../runtime/run.js";
import { type ControlFlags, controlLiveRun, positiveSeconds } from "../control.js";
import { drive, refuse } from "../drive.js";
import type { HostSettings } from "../host-options.js";
import { INSPECT_HELP, inspectionFor, STATELY_HELP } from "../inspection.js";
import { inspectionBeside } from "../inspection-beside.js";
import type { CliIo } from "../io.js";
import { collect } from "../options.js";
import { withRunHost } from "../run-host.js";
import { noStoreFor, openExistingStore } from "../store.js";

interface StoredRunFlags extends ControlFlags {
  store?: string;
  json?: boolean;
  force?: boolean;
  approve?: string[];
  deny?: string[];
  headless?: boolean;
  inspect?: string | true;
  stately?: boolean;
}

/** `resume`, and the control events sent to a stored run: `cancel`, `override`, `redo`. */
export function registerResume(program: Command, io: CliIo, setExit: (code: number) => void): void {
  const storeOption = "--store <path>";
  program
    .command("resume")
    .description("continue a stopped or interrupted run from its last step")
    .argument("<runId>")
    .option(storeOption, "the run store (default: .stagechart/runs.db)")
    .option("--force", "resume even if the pipeline changed since the run was saved")
    .option("--approve <proposalId>", "grant a request the run waits for; repeatable", collect)
    .option("--deny <proposalId>", "deny a request the run waits for; repeatable", collect)
    .option("--headless", "no interactive prompts, even on a terminal")
    .option("--inspect [port]", INSPECT_HELP)
    .option("--stately", STATELY_HELP)
    .option("--json", "print a JSON summary last on stdout")
    .action(async (runId: string, flags: StoredRunFlags) =>
      setExit(await continueRun(runId, flags, io)),
    );
  program
    .command("cancel")
    .description("cancel a stored run")
    .argument("<runId>")
    .option(storeOption, "the run store")
    .option("--by <name>", "who asks, for the audit log (with this process's pid, host and user)")
    .option(
      "--timeout <seconds>",
      "how long to wait for a live run's process to take it (default 30)",
      positiveSeconds,
    )
    .option("--json", "print a JSON summary last on stdout")
    .action(async (runId: string, flags: StoredRunFlags) =>
      setExit(
        await continueRun(runId, flags, io, {
          type: "CANCEL",
          reason: "cancelled from the command line",
        }),
      ),
    );
  program
    .command("override")
    .description("move a stored run to a stage its transitions can reach, with a reason")
    .argument("<runId>")
    .requiredOption("--to <stage>", "the stage to move to")
    .requiredOption("--reason <text>", "why (audited)")
    .option(storeOption, "the run store")
    .option("--by <name>", "who asks, for the audit log (with this process's pid, host and user)")
    .option(
      "--timeout <seconds>",
      "how long to wait for a live run's process to take it (default 30)",
      positiveSeconds,
    )
    .option("--json", "print a JSON summary last on stdout")
    .action(async (runId: string, flags: StoredRunFlags & { to: string; reason: string }) =>
      setExit(
        await continueRun(runId, flags, io, {
          type: "OVERRIDE",
          to: flags.to,
          reason: flags.reason,
        }),
      ),
    );
  program
    .command("redo")
    .description("run a stage of a stored run again, as a new stage execution")
    .argument("<runId>")
    .argument("<stage>")
    .option(storeOption, "the run store")
    .option("--by <name>", "who asks, for the audit log (with this process's pid, host and user)")
    .option(
      "--timeout <seconds>",
      "how long to wait for a live run's process to take it (default 30)",
      positiveSeconds,
    )
    .option("--json", "print a JSON summary last on stdout")
    .action(async (runId: string, stage: string, flags: StoredRunFlags) =>
      setExit(await continueRun(runId, flags, io, { type: "REDO", stage })),
    );
}

async function continueRun(
  runId: string,
  flags: StoredRunFlags,
  io: CliIo,
  event?: PipelineEvent,
): Promise<number> {
  // No store file: the run cannot be in it, and none is created just to say so.
  const store = openExistingStore(flags.store);
  if (!store) return refuse(io, flags.json, noStoreFor(runId, flags.store), runId);
  if (!store.ok) return refuse(io, flags.json, store.error, runId);
  try {
    const run = store.value.getRun(runId);
    if (!run.ok) return refuse(io, flags.json, run.error, runId);
    // Another live process runs it: that process is asked, through the store.
    if (event && isLive(store.value, runId)) {
      const answered = await controlLiveRun(store.value, runId, event, flags, io);
      if (answered !== undefined) return answered;
    }
    // Whoever resumes decides whether there is somebody at the terminal to ask.
    const settings = {
      ...(run.value.options as unknown as HostSettings),
      headless: Boolean(flags.headless),
    };
    // A refusal leaves the run as it was: say so with its status.
    const refused = (error: StagechartError) =>
      refuse(io, flags.json, error, runId, run.value.status);
    const stored = { runId, status: run.value.status };
    const inspecting = inspectionBeside(
      inspectionFor(flags.inspect, flags.store, io, flags.stately),
    );
    inspecting.ranAs(runId);
    try {
      return await withRunHost(
        settings,
        io,
        flags.json,
        stored,
        async (pipeline, host, progress) => {
          const inspection = await inspecting.ready();
          const resumed = resumeRun(pipeline, runId, {
            host: inspection ? inspection.withPage(host) : host,
            ...(inspection && { inspect: inspection.inspect }),
            store: store.value,
            force: Boolean(flags.force),
            answers: answersOf(flags),
            ...(event && { control: event }),
          });
          if (!resumed.ok) return refused(resumed.error);
          return await drive(resumed.value, io, Boolean(flags.json), progress);
        },
      );
    } finally {
      await inspecting.finish();
    }
  } finally {
    store.value.close();
  }
}

function answersOf(flags: StoredRunFlags): GrantAnswer[] {
  const by = "command line";
  return [
    ...(flags.approve ?? []).map((proposalId) => ({
      proposalId,
      decision: "approve" as const,
      by,
    })),
    ...(flags.deny ?? []).map((proposalId) => ({ proposalId, decision: "deny" as const, by })),
  ];
}
