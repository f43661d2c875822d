import { dirname, resolve } from "node:path";
import { err, ok, type Result, StagechartError } from "../../errors.js";
import { readRegularText } from "../../files.js";
import { redactUrl } from "../../secrets/redact.js";
import * as z from "../../zod.js";
import { serverNameFromCommand, splitCommandLine } from "./command-line.js";
import { SERVER_NAME } from "./naming.js";

/** One MCP server: started over stdio, or reached over HTTP. */
export type McpServerConfig = McpStdioServer | McpHttpServer;

/** An MCP server to start over stdio. */
export interface McpStdioServer {
  name: string;
  command: string;
  args: string[];
  /** Added to the small safe environment the SDK passes on (PATH, HOME, …). */
  env?: Record<string, string>;
  /** The server's working directory. */
  cwd: string;
}

/**
 * An MCP server reached over HTTP: streamable HTTP first, then the older HTTP+SSE transport
 * for a server that only speaks that (`auto`), or the one named. `headers` go with every
 * request (an `Authorization` header, say); their values are secrets: only a config file holds
 * them (or the environment variables it names), never the store, and they are removed from
 * everything the server's answers and errors put in a run's record.
 */
export interface McpHttpServer {
  name: string;
  url: string;
  headers?: Record<string, string>;
  transport: "auto" | "streamable-http" | "sse";
}

export const isHttpServer = (config: McpServerConfig): config is McpHttpServer => "url" in config;

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
  const given = (named ? named.command : spec).trim();
  if (/^https?:\/\//i.test(given)) return httpFlag(spec, given, named?.name);
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

/** `--mcp "<name>=https://…"`: a server over HTTP, without headers (a config file gives those). */
function httpFlag(spec: string, url: string, name: string | undefined): Result<McpServerConfig> {
  if (!URL.canParse(url))
    return err(configError(`--mcp ${url} is not a URL`, { spec: redactUrl(spec) }));
  const host = new URL(url).hostname.split(".").find((part) => part !== "www") ?? "";
  const chosen = name ?? host.replace(/[^A-Za-z0-9_-]/g, "-").slice(0, 32);
  if (!SERVER_NAME.test(chosen)) return err(nameError(chosen, `--mcp "${redactUrl(spec)}"`));
  return ok({ name: chosen, url, transport: "auto" });
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

const stdioEntrySchema = z.looseObject({
  command: z
    .string({ error: "needs a command (a stdio server) or a url (an HTTP server)" })
    .check(z.minLength(1, { error: "needs a non-empty command" })),
  args: z.optional(z.array(z.string(), { error: "args must be a list of strings" })),
  env: z.optional(z.record(z.string(), z.string(), { error: "env must map names to strings" })),
  cwd: z.optional(z.string({ error: "cwd must be a string" })),
});

const httpEntrySchema = z.looseObject({
  url: z.string({ error: "url must be a string" }).check(
    z.refine((url) => /^https?:\/\//i.test(url) && URL.canParse(url), {
      error: "url must be an http:// or https:// URL",
    }),
  ),
  headers: z.optional(
    z.record(z.string(), z.string(), { error: "headers must map names to strings" }),
  ),
  // `type` as other MCP clients' config files spell it: "http" (streamable HTTP) or "sse".
  type: z.optional(
    z.enum(["http", "streamable-http", "sse"], { error: 'type must be "http" or "sse"' }),
  ),
  transport: z.optional(
    z.enum(["auto", "streamable-http", "sse"], {
      error: 'transport must be "auto", "streamable-http" or "sse"',
    }),
  ),
});

const entrySchema = z.union([httpEntrySchema, stdioEntrySchema], {
  error: "needs a command (a stdio server) or a url (an HTTP server)",
});

const configSchema = z.looseObject({
  mcpServers: z.record(z.string(), entrySchema, {
    error: 'needs "mcpServers": { "<name>": { "command", "args", "env" } or { "url", "headers" } }',
  }),
});

/** A config file names a few servers; a larger one is refused rather than read whole. */
const MAX_CONFIG_BYTES = 1024 * 1024;

/** A config file in the widely used shape `{ "mcpServers": { "<name>": { command, args, env } } }`. */
export async function loadMcpConfigFile(
  file: string,
  cwd: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
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
    if ("url" in entry && typeof entry.url === "string") {
      const headers = expandedHeaders(entry.headers as Record<string, string> | undefined, env);
      if (!headers.ok)
        return err(
          configError(`the MCP config file ${file}: server "${name}" ${headers.error}`, {
            file,
            server: name,
          }),
        );
      const type = entry.type ?? entry.transport;
      servers.push({
        name,
        url: entry.url,
        ...(headers.value && { headers: headers.value }),
        transport:
          type === "http" ? "streamable-http" : ((type as McpHttpServer["transport"]) ?? "auto"),
      });
      continue;
    }
    const stdio = entry as z.infer<typeof stdioEntrySchema>;
    servers.push({
      name,
      command: stdio.command,
      args: stdio.args ?? [],
      ...(stdio.env && { env: stdio.env }),
      cwd: stdio.cwd === undefined ? cwd : resolve(dirname(file), stdio.cwd),
    });
  }
  return ok(servers);
}

/**
 * A server's headers with each `${NAME}` replaced by the environment variable's value, so the
 * file need not hold the secret itself; a variable that is not set is an error naming it.
 */
function expandedHeaders(
  headers: Record<string, string> | undefined,
  env: Readonly<Record<string, string | undefined>>,
): Result<Record<string, string> | undefined, string> {
  if (!headers) return ok(undefined);
  const expanded: Record<string, string> = {};
  for (const [header, value] of Object.entries(headers)) {
    let missing: string | undefined;
    expanded[header] = value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, variable: string) => {
      const set = env[variable];
      if (set === undefined) missing ??= variable;
      return set ?? "";
    });
    if (missing)
      return err(`header ${header} names the environment variable ${missing}, which is not set`);
  }
  return ok(expanded);
}

const configError = (message: string, context: Record<string, unknown>) =>
  new StagechartError("Validation/McpConfigInvalid", message, context);

const nameError = (name: string, where: string) =>
  new StagechartError(
    "Validation/McpServerNameInvalid",
    `the MCP server name "${name}" (${where}) must be 1 to 32 letters, digits, "_" or "-", starting with a letter or digit`,
    { server: name },
  );
