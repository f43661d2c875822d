import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  loadMcpConfigFile,
  mcpToolName,
  parseMcpFlag,
  resolveMcpServers,
} from "../../src/tools/index.js";
import { serverNameFromCommand, splitCommandLine } from "../../src/tools/mcp/command-line.js";
import { tempDir } from "../support/stages.js";

const words = (line: string) => {
  const split = splitCommandLine(line);
  return split.ok ? split.value : split.error;
};

function configFile(content: unknown): string {
  const file = join(tempDir(), "mcp.json");
  writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content));
  return file;
}

describe("--mcp command lines", () => {
  it("splits words like a shell, with quotes and backslashes, without running one", () => {
    expect(words("node  server.js --root '/tmp/my dir'")).toEqual([
      "node",
      "server.js",
      "--root",
      "/tmp/my dir",
    ]);
    expect(words('run "a \\"b\\"" c\\ d \'$HOME\' ""')).toEqual([
      "run",
      'a "b"',
      "c d",
      "$HOME",
      "",
    ]);
    expect(words("node 'open")).toBe(`unclosed ' in "node 'open"`);
  });

  it("names a server after what its command runs, past launchers and options", () => {
    const name = (line: string) => serverNameFromCommand(words(line) as string[]);
    expect(name("npx -y @modelcontextprotocol/server-filesystem /tmp")).toBe("server-filesystem");
    expect(name("node test/support/mcp-demo-server.mjs")).toBe("mcp-demo-server");
    expect(name("uvx mcp-server-git@0.6 --repository .")).toBe("mcp-server-git");
    expect(name("python3 -m weather.server")).toBe("weather-server");
    expect(name("python3 server.py")).toBe("server");
    expect(name("/usr/local/bin/github-mcp stdio")).toBe("github-mcp");
  });

  it("takes name=command, or derives the name, resolving nothing but keeping the directory", () => {
    expect(parseMcpFlag("docs=node docs.js --port 0", "/work")).toEqual({
      ok: true,
      value: { name: "docs", command: "node", args: ["docs.js", "--port", "0"], cwd: "/work" },
    });
    expect(parseMcpFlag("node lookup-server.js --opt=1", "/work")).toMatchObject({
      ok: true,
      value: { name: "lookup-server", command: "node", args: ["lookup-server.js", "--opt=1"] },
    });
  });

  it("refuses an empty command, a broken quote and a bad name", () => {
    const code = (spec: string) => {
      const parsed = parseMcpFlag(spec, "/");
      return parsed.ok ? undefined : parsed.error.code;
    };
    expect(code("   ")).toBe("Validation/McpConfigInvalid");
    expect(code("name=")).toBe("Validation/McpConfigInvalid");
    expect(code("node 'x")).toBe("Validation/McpConfigInvalid");
    expect(code("-bad=node x.js")).toBe("Validation/McpServerNameInvalid");
  });

  it("takes a URL as a server over HTTP, named or named after its host", () => {
    expect(parseMcpFlag("docs=https://mcp.example.com/mcp", "/")).toEqual({
      ok: true,
      value: { name: "docs", url: "https://mcp.example.com/mcp", transport: "auto" },
    });
    expect(parseMcpFlag("https://www.context7.com/mcp", "/")).toMatchObject({
      ok: true,
      value: { name: "context7", url: "https://www.context7.com/mcp" },
    });
  });

  it("takes the text before the first = as a name unless it plainly belongs to a command", () => {
    const parsed = (spec: string) => {
      const result = parseMcpFlag(spec, "/");
      return result.ok && "command" in result.value
        ? { name: result.value.name, command: result.value.command }
        : result.ok
          ? result.value
          : result.error;
    };
    // Several words, none an option, path or quote: a name, so checked as one — not spawned.
    const misnamed = parsed("bad name!=node -e 1");
    expect(misnamed).toMatchObject({
      code: "Validation/McpServerNameInvalid",
      message: expect.stringContaining('name the server: --mcp "<name>=bad name!=node -e 1"'),
    });
    expect(parsed("mytool key=value")).toMatchObject({ code: "Validation/McpServerNameInvalid" });
    expect(parsed(" docs = node docs.js")).toEqual({ name: "docs", command: "node" });
    // An option, a path or a quote before the = : the whole value is the command.
    expect(parsed("node server.js --port=3000")).toEqual({ name: "server", command: "node" });
    expect(parsed("./srv key=1")).toEqual({ name: "srv", command: "./srv" });
    expect(parsed('node -e "x=1"')).toMatchObject({ command: "node" });
    expect(parsed("t=mytool key=value")).toEqual({ name: "t", command: "mytool" });
  });
});

describe("--mcp-config files", () => {
  it("reads the mcpServers shape: command, args, env, and cwd relative to the file", async () => {
    const file = configFile({
      mcpServers: {
        demo: { command: "node", args: ["server.mjs"], env: { TOKEN: "t" } },
        files: { type: "stdio", command: "files-mcp", cwd: "sub" },
      },
    });
    const loaded = await loadMcpConfigFile(file, "/work");
    expect(loaded).toEqual({
      ok: true,
      value: [
        { name: "demo", command: "node", args: ["server.mjs"], env: { TOKEN: "t" }, cwd: "/work" },
        { name: "files", command: "files-mcp", args: [], cwd: join(file, "../sub") },
      ],
    });
  });

  it("explains an unreadable file, broken JSON, a wrong shape and a server without a command", async () => {
    const problem = async (file: string) => {
      const loaded = await loadMcpConfigFile(file, "/");
      return loaded.ok ? undefined : `${loaded.error.code} ${loaded.error.message}`;
    };
    expect(await problem("/no/such/mcp.json")).toMatch(
      /^Validation\/McpConfigInvalid cannot read the MCP config file \/no\/such\/mcp.json/,
    );
    expect(await problem(configFile("{ nope"))).toMatch(
      /^Validation\/McpConfigInvalid cannot read/,
    );
    expect(await problem(configFile({ servers: {} }))).toContain(
      'needs "mcpServers": { "<name>": { "command", "args", "env" } or { "url", "headers" } }',
    );
    expect(await problem(configFile({ mcpServers: { web: { args: ["x"] } } }))).toContain(
      "mcpServers.web: needs a command (a stdio server) or a url (an HTTP server)",
    );
    expect(await problem(configFile({ mcpServers: { web: { url: "ftp://x" } } }))).toContain(
      "mcpServers.web.url: url must be an http:// or https:// URL",
    );
    expect(await problem(configFile({ mcpServers: { "a b": { command: "x" } } }))).toMatch(
      /^Validation\/McpServerNameInvalid the MCP server name "a b"/,
    );
  });

  it("refuses a config file that is a FIFO, without waiting for a writer", async () => {
    const fifo = join(tempDir(), "mcp.json");
    execFileSync("mkfifo", [fifo]);
    const loaded = await loadMcpConfigFile(fifo, "/");
    expect(loaded.ok ? undefined : `${loaded.error.code} ${loaded.error.message}`).toBe(
      `Validation/McpConfigInvalid cannot read the MCP config file ${fifo}: it is a FIFO (named pipe), not a regular file`,
    );
  });

  it("puts --mcp servers before config servers, and refuses two servers with one name", async () => {
    const file = configFile({ mcpServers: { demo: { command: "node" } } });
    const both = await resolveMcpServers({ commands: ["x=run-x"], configFiles: [file], cwd: "/" });
    expect(both.ok && both.value.map((s) => s.name)).toEqual(["x", "demo"]);
    const clash = await resolveMcpServers({
      commands: ["demo=node other.js"],
      configFiles: [file],
      cwd: "/",
    });
    expect(clash.ok ? undefined : clash.error.code).toBe("Validation/McpServerNameInvalid");
  });
});

describe("MCP tool names", () => {
  it("are mcp__<server>__<tool>, with characters providers reject replaced, and none over 64", () => {
    expect(mcpToolName("demo", "lookup")).toBe("mcp__demo__lookup");
    expect(mcpToolName("gh", "repos.list/all")).toBe("mcp__gh__repos_list_all");
    expect(mcpToolName("demo", "x".repeat(60))).toBeUndefined();
  });
});
