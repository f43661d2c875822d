import type { JsonValue } from "../definitions/contract.js";
import type { JsonSchema } from "../definitions/json-schema.js";
import type { StagechartError } from "../errors.js";
import type { BashConfinement } from "./bash-sandbox.js";

export type { JsonValue };

export interface ToolLimits {
  /** Largest output a tool returns; longer output is cut and says so. */
  maxOutputBytes: number;
  /** How long one call may run before it is stopped (`ToolTransient/ToolTimeout`). */
  timeoutMs: number;
}

export const DEFAULT_TOOL_LIMITS: ToolLimits = { maxOutputBytes: 64 * 1024, timeoutMs: 120_000 };

/** What a tool call runs with. Tools touch nothing outside `root`. */
export interface ToolContext {
  /** The project root, already resolved with realpath. */
  root: string;
  /** Aborted when the stage is cancelled or the call times out. */
  signal: AbortSignal;
  limits: ToolLimits;
  /** How Bash runs; without it, inside bubblewrap when it can be used (mode `auto`). */
  sandbox?: BashConfinement;
  /**
   * The environment commands run with, free of provider keys; without it, the process
   * environment without the provider keys it holds.
   */
  env?: Readonly<Record<string, string>>;
}

export type ToolOutcome = { ok: true; output: JsonValue } | { ok: false; error: StagechartError };

/** A tool the host offers. Built-ins, MCP tools and user tools all have this shape. */
export interface Tool<Args = Record<string, unknown>> {
  name: string;
  description: string;
  /** JSON Schema of the arguments (`type: object`); arguments are checked before `execute`. */
  inputSchema: JsonSchema;
  /** Whether the tool changes anything (files, processes); read-only tools are safe to repeat. */
  mutates: boolean;
  /** The gist of a call for people and rules: `git status` for Bash, the path for Edit. */
  summarize(args: Args): string;
  /** Never throws for a failed call: failures are outcomes the model can read. */
  execute(args: Args, context: ToolContext): Promise<ToolOutcome>;
}

// biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of every argument type
export type AnyTool = Tool<any>;
