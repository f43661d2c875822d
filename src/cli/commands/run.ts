import { existsSync } from "node:fs";
import { type Command, InvalidArgumentError, Option } from "commander";
import type { UnansweredGrants } from "../../runtime/host.js";
import { startRun } from "../../runtime/run.js";
import { SECURITY_MODES, type SecurityMode } from "../../runtime/security-mode.js";
import { openAnyStore } from "../any-store.js";
import { detachRun } from "../detach.js";
import { drive, refuse } from "../drive.js";
import { addSandboxOptions, type SandboxFlags, settingsFor } from "../host-options.js";
import { INSPECT_HELP, inspectionFor, STATELY_HELP } from "../inspection.js";
import { inspectionBeside } from "../inspection-beside.js";
import type { CliIo } from "../io.js";
import { addMcpOptions, type McpFlags, mcpSourcesFor } from "../mcp-options.js";
import {
  maxParallelOption,
  pricesOption,
  STREAM_JSON_HELP,
  TRACE_CONTENT_HELP,
} from "../options.js";
import { pipelineFile, pipelineNotFound } from "../pipelines.js";
import { pageAnswers, WAIT_FOR_PAGE_HELP, withRunHost } from "../run-host.js";
import { STORE_HELP } from "../store.js";

interface RunFlags extends McpFlags, SandboxFlags {
  task?: string;
  set: Record<string, unknown>;
  model?: string;
  record?: string;
  mode: SecurityMode;
  headless?: boolean;
  waitForPage?: boolean;
  onGrant: UnansweredGrants;
  root?: string;
  store?: string;
  runId?: string;
  json?: boolean;
  inspect?: string | true;
  stately?: boolean;
  detach?: boolean;
  maxParallel?: number;
  prices?: string;
  traceContent?: boolean;
  streamJson?: boolean;
}

export function registerRun(program: Command, io: CliIo, setExit: (code: number) => void): void {
  const command = program
    .command("run")
    .description(
      "run a pipeline (a bundled name such as code-review, or a path); every step is stored",
    )
    .argument("<pipeline>", "bundled pipeline name or pipeline file")
    .option("--task <text>", "the task, as ctx.task")
    .option(
      "--set <key=value>",
      "another ctx field (JSON values are parsed); repeatable",
      setCtxField,
      {},
    )
    .option(
      "--model <spec>",
      "scripted:<file> (default: the pipeline's bundled script), replay:<cassette>, openai:<model>, openai-responses:<model>, anthropic:<model>, openai-compatible:<baseURL>#<model>",
    )
    .option("--record <file>", "write every model exchange of the run to this cassette (JSON)")
    .addOption(
      new Option("--mode <mode>", "security mode for calls no stage envelope covers")
        .choices(SECURITY_MODES)
        .default("ask"),
    )
    .option("--headless", "no interactive prompts: grant requests are denied (or see --on-grant)")
    .addOption(
      new Option(
        "--on-grant <what>",
        "a grant request nobody can answer: deny it, or suspend the run until `resume --approve/--deny`",
      )
        .choices(["deny", "suspend"])
        .default("deny"),
    )
    .option("--root <dir>", "the directory tools work in (default: the working directory)")
    .option("--store <path|url>", STORE_HELP)
    .option("--run-id <id>", "the run's id (default: generated)")
    .option("--inspect [port]", INSPECT_HELP)
    .option("--wait-for-page", WAIT_FOR_PAGE_HELP)
    .option("--trace-content", TRACE_CONTENT_HELP)
    .option("--stream-json", STREAM_JSON_HELP)
    .option("--stately", STATELY_HELP)
    .option("--json", "print a JSON summary last on stdout")
    .addOption(maxParallelOption())
    .addOption(pricesOption())
    .option(
      "--detach",
      "do not run it here: store it as queued, with its definition, for a worker; prints its id",
    );
  addMcpOptions(addSandboxOptions(command)).action(async (name: string, flags: RunFlags) =>
    setExit(await run(name, flags, io)),
  );
}

async function run(name: string, given: RunFlags, io: CliIo): Promise<number> {
  // The stream's last line is the summary --json prints.
  const flags = given.streamJson ? { ...given, json: true } : given;
  const file = pipelineFile(name);
  if (!existsSync(file)) return refuse(io, flags.json, pipelineNotFound(name), flags.runId);
  const settings = settingsFor({ ...flags, pipelineFile: file, mcp: mcpSourcesFor(flags) });
  if (flags.detach) return detachRun(file, settings, flags, io);
  const inspecting = inspectionBeside(inspectionFor(flags.inspect, flags.store, io, flags.stately));
  try {
    return await withRunHost(
      settings,
      io,
      flags.json,
      { runId: flags.runId, traceContent: flags.traceContent, streamJson: flags.streamJson },
      async (pipeline, host, progress) => {
        const store = await openAnyStore(flags.store);
        if (!store.ok) return refuse(io, flags.json, store.error, flags.runId);
        try {
          const inspection = await inspecting.ready();
          const started = await startRun(pipeline, {
            store: store.value,
            host: inspection
              ? inspection.withPage(host, !pageAnswers(settings, io, flags.waitForPage))
              : host,
            ...(inspection && { inspect: inspection.inspect }),
            resumeWith: { ...settings },
            ...(flags.runId !== undefined && { runId: flags.runId }),
            ...(flags.task !== undefined && { task: flags.task }),
            ctx: flags.set,
          });
          if (!started.ok) return refuse(io, flags.json, started.error, flags.runId);
          inspecting.ranAs(started.value.runId);
          inspection?.announce(started.value.runId);
          return await drive(started.value, io, Boolean(flags.json), progress);
        } finally {
          await store.value.close();
        }
      },
    );
  } finally {
    await inspecting.finish();
  }
}

/** One `--set key=value` into the ctx so far; a value that parses as JSON is JSON, else text. */
export function setCtxField(set: string, ctx: Record<string, unknown>): Record<string, unknown> {
  const at = set.indexOf("=");
  if (at <= 0) throw new InvalidArgumentError(`--set needs key=value, got "${set}"`);
  const raw = set.slice(at + 1);
  try {
    return { ...ctx, [set.slice(0, at)]: JSON.parse(raw) };
  } catch {
    return { ...ctx, [set.slice(0, at)]: raw };
  }
}
