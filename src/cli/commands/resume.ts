import { resolve } from "node:path";
import { type Command, Option } from "commander";
import type { PipelineEvent } from "../../compiler/pipeline-context.js";
import { err, ok, type Result, StagechartError } from "../../errors.js";
import type { ResumeInput } from "../../runtime/ask-stages.js";
import { parseAnswer } from "../../runtime/interactors.js";
import type { GrantAnswer } from "../../runtime/run.js";
import {
  type ControlOutcome,
  createRunControl,
  type PreparedRun,
  type RunControlRequest,
} from "../../runtime/run-control.js";
import type { RunRecord } from "../../runtime/run-records.js";
import type { HostSettings } from "../../runtime/stored-host.js";
import { openExistingAnyStore } from "../any-store.js";
import { drive, refuse } from "../drive.js";
import { INSPECT_HELP, inspectionFor, STATELY_HELP } from "../inspection.js";
import { inspectionBeside } from "../inspection-beside.js";
import { type CliIo, EXIT } from "../io.js";
import { progressFor } from "../live-progress.js";
import { lostStepsOf, warnLost } from "../lost-steps.js";
import {
  collect,
  maxParallelOption,
  positiveSeconds,
  pricesOption,
  STREAM_JSON_HELP,
  TRACE_CONTENT_HELP,
} from "../options.js";
import { openRunHost, pageAnswers, type RunHost, WAIT_FOR_PAGE_HELP } from "../run-host.js";
import { noStoreFor, STORE_HELP } from "../store.js";

interface StoredRunFlags {
  store?: string;
  json?: boolean;
  /** Who asks for a live run's control event. */
  by?: string;
  /** Seconds to wait for a live run's owner. */
  timeout?: number;
  force?: boolean;
  approve?: string[];
  deny?: string[];
  input?: string;
  inputFor?: string;
  headless?: boolean;
  waitForPage?: boolean;
  inspect?: string | true;
  stately?: boolean;
  maxParallel?: number;
  prices?: string;
  traceContent?: boolean;
  streamJson?: boolean;
}

/** `resume`, and the control events sent to a stored run: `cancel`, `override`, `redo`. */
export function registerResume(program: Command, io: CliIo, setExit: (code: number) => void): void {
  const storeOption = "--store <path|url>";
  program
    .command("resume")
    .description("continue a stopped or interrupted run from its last step")
    .argument("<runId>")
    .option(storeOption, STORE_HELP)
    .option(
      "--force",
      "resume even if the pipeline changed since the run was saved, or the store lost steps of it",
    )
    .addOption(approveOption())
    .addOption(denyOption())
    .addOption(inputOption())
    .addOption(inputForOption())
    .option("--headless", "no interactive prompts, even on a terminal")
    .option("--inspect [port]", INSPECT_HELP)
    .option("--wait-for-page", WAIT_FOR_PAGE_HELP)
    .option("--trace-content", TRACE_CONTENT_HELP)
    .option("--stream-json", STREAM_JSON_HELP)
    .option("--stately", STATELY_HELP)
    .option("--json", "print a JSON summary last on stdout")
    .addOption(maxParallelOption())
    .addOption(pricesOption())
    .action(async (runId: string, flags: StoredRunFlags) =>
      setExit(await continueRun(runId, flags, io)),
    );
  program
    .command("cancel")
    .description("cancel a stored run")
    .argument("<runId>")
    .option(storeOption, STORE_HELP)
    .addOption(byOption())
    .addOption(timeoutOption())
    .option("--json", "print a JSON summary last on stdout")
    .action(async (runId: string, flags: StoredRunFlags) => {
      const reason = "cancelled from the command line";
      setExit(await controlRun(runId, flags, io, { type: "CANCEL", reason }));
    });
  program
    .command("override")
    .description("move a stored run to a stage its transitions can reach, with a reason")
    .argument("<runId>")
    .requiredOption("--to <stage>", "the stage to move to")
    .requiredOption("--reason <text>", "why (audited)")
    .option(storeOption, STORE_HELP)
    .addOption(byOption())
    .addOption(timeoutOption())
    .option("--json", "print a JSON summary last on stdout")
    .action(async (runId: string, flags: StoredRunFlags & { to: string; reason: string }) =>
      setExit(
        await controlRun(runId, flags, io, {
          type: "OVERRIDE",
          to: flags.to,
          reason: flags.reason,
        }),
      ),
    );
  program
    .command("redo")
    .description(
      "run a stage of a stored run again, as a new stage execution; reopens a run that ended done if its pipeline is reopenable",
    )
    .argument("<runId>")
    .argument(
      "[stage]",
      "the stage to run again (for a done run: the one it ended from by default)",
    )
    .option("--reason <text>", "why (audited; needed to reopen a run that ended done)")
    .option(storeOption, STORE_HELP)
    .addOption(byOption())
    .addOption(timeoutOption())
    .option("--json", "print a JSON summary last on stdout")
    .action(
      async (
        runId: string,
        stage: string | undefined,
        flags: StoredRunFlags & { reason?: string },
      ) => setExit(await continueRun(runId, flags, io, redoOf(stage, flags))),
    );
}

/**
 * A redo: reopens a run that ended done (from `stage`, else the stage it ended from), else sends
 * REDO to the stored run, which needs the stage named.
 */
const redoOf =
  (stage: string | undefined, flags: StoredRunFlags & { reason?: string }): RequestFor =>
  (run) => {
    if (run.status === "done")
      return ok({
        reopen: stage === undefined ? {} : { stage },
        reason: flags.reason ?? "",
        by: flags.by ?? "command line",
      });
    if (!stage)
      return err(
        new StagechartError(
          "Validation/RedoStageMissing",
          `name the stage of run ${run.runId} to redo; only a run that ended done runs its last stage again by default`,
        ),
      );
    return ok({ control: { type: "REDO", stage } });
  };

/** What a command asks of a stored run (`RunControl`), given the run's row; or why it cannot. */
type RequestFor = (run: { runId: string; status: string }) => Result<RunControlRequest>;

/** `resume`, `cancel` and `override`: the run resumed, with answers and a control event if any. */
const resumeWith =
  (flags: StoredRunFlags, control?: PipelineEvent): RequestFor =>
  () =>
    ok({
      force: Boolean(flags.force),
      answers: answersOf(flags),
      inputs: inputsOf(flags),
      ...(control && { control }),
    });

/** `cancel` and `override`: the event sent to the run's live owner, or the stored run resumed with it. */
const controlRun = (runId: string, flags: StoredRunFlags, io: CliIo, event: PipelineEvent) =>
  continueRun(runId, flags, io, resumeWith(flags, event));

/**
 * Continues a stored run through the one control path (`RunControl`): a queued run's cancel
 * cancels it in place; a control event for a run another live process owns is handed to that
 * process through the store; otherwise the run is resumed here, on this terminal, with the
 * pipeline and host its stored settings describe, and driven to its end.
 */
async function continueRun(
  runId: string,
  given: StoredRunFlags,
  io: CliIo,
  requestFor: RequestFor = resumeWith(given),
): Promise<number> {
  // The stream's last line is the summary --json prints.
  const flags = given.streamJson ? { ...given, json: true } : given;
  // No store file: the run cannot be in it, and none is created just to say so.
  const opened = await openExistingAnyStore(flags.store);
  if (!opened) return refuse(io, flags.json, noStoreFor(runId, flags.store), runId);
  if (!opened.ok) return refuse(io, flags.json, opened.error, runId);
  const store = opened.value;
  try {
    const lost = await lostStepsOf(store, runId);
    const run = await store.getRun(runId);
    if (!run.ok) return refuse(io, flags.json, lost[0] ?? run.error, runId);
    const request = requestFor(run.value);
    if (!request.ok) return refuse(io, flags.json, request.error, runId, run.value.status);
    const terminal = thisTerminal(run.value, flags, io, lost);
    const control = createRunControl({
      store,
      ...(flags.by && { by: flags.by }),
      ...(flags.timeout && { timeoutMs: flags.timeout * 1000 }),
      handingOver: terminal.handingOver,
      prepare: terminal.prepare,
    });
    try {
      const outcome = await control.act(runId, request.value);
      if (terminal.exit !== undefined) return terminal.exit;
      // A refusal leaves the run as it was: say so with its status.
      if (!outcome.ok) return refuse(io, flags.json, outcome.error, runId, terminal.status);
      return await reported(outcome.value, request.value, flags, io, terminal.here);
    } finally {
      await terminal.close();
    }
  } finally {
    await store.close();
  }
}

/**
 * The command's side of a request: what it prints as the live owner is asked, and the run
 * prepared to go on here — its host on this terminal (with the inspect page beside it when
 * asked), what the store lost of it said once — and what it opened for it, closed by `close`.
 */
function thisTerminal(
  run: RunRecord,
  flags: StoredRunFlags,
  io: CliIo,
  lost: readonly StagechartError[],
) {
  const { runId } = run;
  // Whoever resumes decides whether there is somebody at the terminal to ask.
  const settings: HostSettings = {
    ...(run.options as unknown as HostSettings),
    headless: Boolean(flags.headless),
    // The run's own cap carries on unless this resume sets another.
    ...(flags.maxParallel !== undefined && { maxParallel: flags.maxParallel }),
    ...(flags.prices !== undefined && { prices: resolve(flags.prices) }),
  };
  let warned = false;
  const warnOnce = () => {
    if (!warned) warnLost(io, lost);
    warned = true;
  };
  let finishInspection: (() => Promise<void>) | undefined;
  const terminal = {
    /** The run's status as a refusal reports it: as stored, or running when its owner refused. */
    status: run.status as string,
    /** What this process opened to run it here. */
    here: undefined as RunHost | undefined,
    /** The exit code of a refusal printed while preparing the run. */
    exit: undefined as number | undefined,
    handingOver: (_runId: string, event: PipelineEvent) => {
      warnOnce();
      terminal.status = "running";
      if (!flags.json)
        io.stderr(`run ${runId} is live in another process: asking it to ${event.type}\n`);
    },
    prepare: async (): Promise<Result<PreparedRun>> => {
      warnOnce();
      terminal.status = run.status;
      const inspecting = inspectionBeside(
        inspectionFor(flags.inspect, flags.store, io, flags.stately),
      );
      inspecting.ranAs(runId);
      finishInspection = inspecting.finish;
      const opened = await openRunHost(settings, io, flags.json, {
        runId,
        status: run.status,
        traceContent: flags.traceContent,
        streamJson: flags.streamJson,
      });
      if (!opened.ok) {
        terminal.exit = opened.exit;
        return err(printedRefusal(runId));
      }
      terminal.here = opened.value;
      const inspection = await inspecting.ready();
      inspection?.announce(runId);
      const { pipeline, host } = opened.value;
      return ok({
        pipeline,
        host: inspection
          ? inspection.withPage(host, !pageAnswers(settings, io, flags.waitForPage))
          : host,
        ...(inspection && { inspect: inspection.inspect }),
      });
    },
    close: async () => {
      await terminal.here?.close();
      await finishInspection?.();
    },
  };
  return terminal;
}

/** What the command prints of how its request was carried out, and its exit code. */
async function reported(
  outcome: ControlOutcome,
  request: RunControlRequest,
  flags: StoredRunFlags,
  io: CliIo,
  here: RunHost | undefined,
): Promise<number> {
  const { runId } = outcome;
  if (outcome.outcome === "resumed") {
    // A run resumed here was prepared here, with its progress on this terminal.
    const progress = here?.progress ?? progressFor(io, flags.json, flags.streamJson);
    return drive(outcome.handle, io, Boolean(flags.json), progress);
  }
  if (outcome.outcome === "cancelled") {
    io.stdout(
      flags.json
        ? `${JSON.stringify({ runId, status: "cancelled" })}\n`
        : `run ${runId} cancelled before any worker took it\n`,
    );
    return EXIT.done;
  }
  const { requestId } = outcome;
  const control = request.control?.type;
  io.stdout(
    flags.json
      ? `${JSON.stringify({ runId, control, outcome: "applied", requestId })}\n`
      : `run ${runId}: ${control} applied by the process that runs it\n`,
  );
  return EXIT.done;
}

/** What `prepare` answers once the command printed why it cannot go on (its exit code is kept). */
const printedRefusal = (runId: string) =>
  new StagechartError(
    "Session/PrepareFailed",
    `run ${runId} could not be prepared to go on here (printed above)`,
    { runId },
  );

/** Who asks for a control event of a live run, and how long to wait for its owner. */
const byOption = () =>
  new Option("--by <name>", "who asks, for the audit log (with this process's pid, host and user)");
const timeoutOption = () =>
  new Option(
    "--timeout <seconds>",
    "how long to wait for a live run's process to take it (default 30)",
  ).argParser(positiveSeconds);

/** The answers `resume` and `fork` take: `--approve`, `--deny`, `--input`, `--input-for`. */
export const approveOption = () =>
  new Option("--approve <proposalId>", "grant a request the run waits for; repeatable").argParser(
    collect,
  );
export const denyOption = () =>
  new Option("--deny <proposalId>", "deny a request the run waits for; repeatable").argParser(
    collect,
  );
export const inputOption = () =>
  new Option("--input <json>", "the answer an ask stage waits for (JSON; other text is a string)");
export const inputForOption = () =>
  new Option("--input-for <stageExecutionId>", "the ask stage --input answers, when several wait");

export function inputsOf(flags: Pick<StoredRunFlags, "input" | "inputFor">): ResumeInput[] {
  if (flags.input === undefined) return [];
  const stageExecutionId = flags.inputFor;
  return [
    {
      value: parseAnswer(flags.input),
      by: "command line",
      ...(stageExecutionId && { stageExecutionId }),
    },
  ];
}

export function answersOf(flags: Pick<StoredRunFlags, "approve" | "deny">): GrantAnswer[] {
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
