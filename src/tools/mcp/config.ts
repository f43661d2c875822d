import { dirname, resolve } from "node:path";
import { err, ok, type Result, StagechartError } from "../../errors.js";
import { readRegularText } from "../../files.js";
import * as z from "../../zod.js";
import { serverNameFromCommand, splitCommandLine } from "./command-line.js";
import { SERVER_NAME } from "./naming.js";

/** One MCP server to start over stdio. */
export interface McpServerConfig {
  name: string;
  command: string;
  args: string[];
  /** Added to the small safe environment the SDK passes on (PATH, HOME, …). */
  env?: Record<string, string>;
  /** The server's working directory. */
  cwd: string;
}

/**
 * Where a run's MCP servers come from, as given on the command line: `--mcp` values and
 * `--mcp-config` files. Stored with a run (rather than the servers themselves) so `resume`
 * reattaches the same servers and the environment in a config file is never copied to the store.
 */
export interface McpSources {
  /** `--mcp` values: `<command>` or `<name>=<command>`. */
  commands: string[];
  /** `--mcp-config` files, absolute. */
  configFiles: string[];
  /** Where relative commands and paths are resolved: the directory the run was started in. */
  cwd: string;
}

/** Every server of `sources`, in order: the `--mcp` commands, then each config file's servers. */
export async function resolveMcpServers(sources: McpSources): Promise<Result<McpServerConfig[]>> {
  const servers: McpServerConfig[] = [];
  for (const spec of sources.commands) {
    const server = parseMcpFlag(spec, sources.cwd);
    if (!server.ok) return server;
    servers.push(server.value);
  }
  for (const file of sources.configFiles) {
    const fromFile = await loadMcpConfigFile(resolve(sources.cwd, file), sources.cwd);
    if (!fromFile.ok) return fromFile;
    servers.push(...fromFile.value);
  }
  const seen = new Set<string>();
  for (const { name } of servers) {
    if (seen.has(name)) {
      return err(
        new StagechartError(
          "Validation/McpServerNameInvalid",
          `two MCP servers are named "${name}"; name them with --mcp "<name>=<command>" or distinct config keys`,
          { server: name },
        ),
      );
    }
    seen.add(name);
  }
  return ok(servers);
}

/** `--mcp "<command>"` or `--mcp "<name>=<command>"`; the name is derived from the command when not given. */
export function parseMcpFlag(spec: string, cwd: string): Result<McpServerConfig> {
  const named = splitServerName(spec);
  const words = splitCommandLine(named ? named.command : spec);
  if (!words.ok) return err(configError(`--mcp ${words.error}`, { spec }));
  const [command, ...args] = words.value;
  if (command === undefined)
    return err(configError(`--mcp needs a command, got "${spec}"`, { spec }));
  const name = named ? named.name : serverNameFromCommand(words.value);
  if (!SERVER_NAME.test(name)) {
    const error = nameError(name, `--mcp "${spec}"`);
    if (!named) return err(error);
    const hint = `; if "${spec}" is all a command, name the server: --mcp "<name>=${spec}"`;
    return err(new StagechartError(error.code, `${error.message}${hint}`, error.context));
  }
  return ok({ name, command, args, cwd });
}

/**
 * The `<name>=` of a `--mcp` value, if it has one. The text before the first `=` is a name —
 * and checked as one — unless it plainly belongs to a command: it has a quote or a backslash,
 * or a word that is an option (`-…`) or a path (with `/` or `.`), as in
 * `node server.js --port=3000`. So `docs=node server.js` and `bad name!=node x` are named (the
 * second refused), while `mytool key=value` must be named to run: `--mcp "t=mytool key=value"`.
 */
function splitServerName(spec: string): { name: string; command: string } | undefined {
  const at = spec.indexOf("=");
  if (at < 0) return undefined;
  const before = spec.slice(0, at).trim();
  const commandLike =
    /['"\\]/.test(before) || before.split(/\s+/).some((word) => /^-|[/.]/.test(word));
  if (/\s/.test(before) && commandLike) return undefined;
  return { name: before, command: spec.slice(at + 1) };
}

const entrySchema = z.looseObject({
  command: z
    .string({ error: "needs a command (only stdio servers, started by a command, are supported)" })
    .check(z.minLength(1, { error: "needs a non-empty command" })),
  args: z.optional(z.array(z.string(), { error: "args must be a list of strings" })),
  env: z.optional(z.record(z.string(), z.string(), { error: "env must map names to strings" })),
  cwd: z.optional(z.string({ error: "cwd must be a string" })),
});

const configSchema = z.looseObject({
  mcpServers: z.record(z.string(), entrySchema, {
    error: 'needs "mcpServers": { "<name>": { "command", "args", "env" } }',
  }),
});

/** A config file names a few servers; a larger one is refused rather than read whole. */
const MAX_CONFIG_BYTES = 1024 * 1024;

/** A config file in the widely used shape `{ "mcpServers": { "<name>": { command, args, env } } }`. */
export async function loadMcpConfigFile(
  file: string,
  cwd: string,
): Promise<Result<McpServerConfig[]>> {
  const read = readRegularText(file, MAX_CONFIG_BYTES);
  if (!read.ok) {
    return err(configError(`cannot read the MCP config file ${file}: ${read.why}`, { file }));
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(read.text);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return err(configError(`cannot read the MCP config file ${file}: ${why}`, { file }));
  }
  const config = configSchema.safeParse(parsed);
  if (!config.success) {
    const problems = config.error.issues.map((issue) =>
      issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message,
    );
    return err(
      configError(`the MCP config file ${file} is invalid: ${problems.join("; ")}`, {
        file,
        problems,
      }),
    );
  }
  const servers: McpServerConfig[] = [];
  for (const [name, entry] of Object.entries(config.data.mcpServers)) {
    if (!SERVER_NAME.test(name)) return err(nameError(name, file));
    servers.push({
      name,
      command: entry.command,
      args: entry.args ?? [],
      ...(entry.env && { env: entry.env }),
      cwd: entry.cwd === undefined ? cwd : resolve(dirname(file), entry.cwd),
    });
  }
  return ok(servers);
}

const configError = (message: string, context: Record<string, unknown>) =>
  new StagechartError("Validation/McpConfigInvalid", message, context);

const nameError = (name: string, where: string) =>
  new StagechartError(
    "Validation/McpServerNameInvalid",
    `the MCP server name "${name}" (${where}) must be 1 to 32 letters, digits, "_" or "-", starting with a letter or digit`,
    { server: name },
  );
