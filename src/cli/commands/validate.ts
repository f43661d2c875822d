import type { Command } from "commander";
import { formatDiagnostic, isError, validatePaths } from "../../definitions/index.js";
import { BUILTIN_TOOL_NAMES } from "../../definitions/pipeline.js";
import { loadScriptFile } from "../../models/script-file.js";
import { type CliIo, EXIT } from "../io.js";
import { addMcpOptions, attachMcpForCli, type McpFlags, mcpSourcesFor } from "../mcp-options.js";
import { counted } from "../status.js";

export function registerValidate(
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
): void {
  const command = program
    .command("validate")
    .description(
      "check stage files, pipelines and scripted-model files (directories: every *.md, *.yaml and *.yml below them) and report every problem",
    )
    .argument("<paths...>", "definition files or directories")
    .option("--json", "print the diagnostics as a JSON array");
  addMcpOptions(command).action(async (paths: string[], options: ValidateFlags) => {
    // allowedTools may name MCP tools: they are checked against the servers' real tool lists.
    const mcp = await attachMcpForCli(mcpSourcesFor(options), io);
    if (!mcp.ok) {
      io.stderr(`${mcp.error.code}: ${mcp.error.message}\n`);
      setExit(EXIT.failed);
      return;
    }
    try {
      const { files, diagnostics } = await validatePaths(paths, {
        loadScript: loadScriptFile,
        toolNames: [...BUILTIN_TOOL_NAMES, ...mcp.value.tools.map((tool) => tool.name)],
      });
      const errors = diagnostics.filter(isError).length;
      if (options.json) {
        io.stdout(`${JSON.stringify(diagnostics, null, 2)}\n`);
      } else {
        for (const d of diagnostics) io.stdout(`${formatDiagnostic(d)}\n`);
        io.stdout(`${summary(files.length, errors, diagnostics.length - errors)}\n`);
      }
      setExit(errors > 0 || files.length === 0 ? EXIT.failed : EXIT.done);
    } finally {
      await mcp.value.close();
    }
  });
}

interface ValidateFlags extends McpFlags {
  json?: boolean;
}

function summary(files: number, errors: number, warnings: number): string {
  if (files === 0) return "no stage or pipeline files found";
  const verdict = errors > 0 ? "invalid" : "valid";
  return `${counted(files, "file")} checked: ${counted(errors, "error")}, ${counted(warnings, "warning")} — ${verdict}`;
}
