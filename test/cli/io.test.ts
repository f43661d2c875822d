import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLEAR_LINE, demoProject, REPO_ROOT, storeOf, withoutColour } from "../support/cli.js";

/** What the user's environment says about colour and the terminal; everything else is cleared. */
type TerminalEnv = { TERM?: string; NO_COLOR?: string; FORCE_COLOR?: string };

/** The environment of the child: ours without any colour or CI setting, plus `settings`. */
function envWith(settings: TerminalEnv): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ["NO_COLOR", "FORCE_COLOR", "CI", "TERM"] as const) delete env[name];
  return { ...env, TERM: "xterm-256color", ...settings };
}

/** The demo run of the quickstart in a fresh project (headless unless said): the binary's argv. */
function demoRun(headless = true): string[] {
  const project = demoProject();
  return [
    join(REPO_ROOT, "bin/stagechart.js"),
    ...["run", "code-review", "--task", "refactor auth module"],
    ...(headless ? ["--headless"] : []),
    ...["--root", project, "--store", storeOf(project)],
  ];
}

const quoted = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`;

/**
 * What the binary writes on a real terminal (a pseudo-terminal from util-linux `script`), with
 * `typed` typed at it (then it is interactive), or headless.
 */
function onTerminal(settings: TerminalEnv, typed?: string): string {
  const command = [process.execPath, ...demoRun(typed === undefined)].map(quoted).join(" ");
  return execFileSync("script", ["-qec", command, "/dev/null"], {
    env: envWith(settings),
    encoding: "utf8",
    ...(typed === undefined ? { stdio: ["ignore", "pipe", "pipe"] } : { input: typed }),
  });
}

/** What the binary writes to a pipe. */
const onPipe = (settings: TerminalEnv): string =>
  execFileSync(process.execPath, demoRun(), {
    env: envWith(settings),
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });

/** Whether `text` holds colour codes. */
const coloured = (text: string) => withoutColour(text) !== text;

describe("the process's terminal (processIo)", () => {
  it("colours the progress and redraws a status line on a terminal", () => {
    const shown = onTerminal({});
    expect(coloured(shown)).toBe(true);
    expect(shown).toContain(CLEAR_LINE);
  });

  it("honours NO_COLOR on a terminal: no colour, the status line still redrawn", () => {
    const shown = onTerminal({ NO_COLOR: "1" });
    expect(coloured(shown)).toBe(false);
    expect(shown).toContain(CLEAR_LINE);
    expect(shown).toMatch(/run run-\S+ done/);
  });

  it("honours TERM=dumb: plain lines, one per event, nothing redrawn", () => {
    const shown = onTerminal({ TERM: "dumb" });
    expect(coloured(shown)).toBe(false);
    expect(shown).not.toContain("\u001b");
    const lines = shown.trimEnd().split("\r\n");
    expect(lines[0]).toMatch(/^run run-\S+ · code-review$/);
    expect(lines.at(-1)).toMatch(/^run run-\S+ done$/);
  });

  it("honours FORCE_COLOR: colour on a dumb terminal and on a pipe, still nothing redrawn", () => {
    const dumb = onTerminal({ TERM: "dumb", FORCE_COLOR: "1" });
    expect(coloured(dumb)).toBe(true);
    expect(dumb).not.toContain(CLEAR_LINE);
    const piped = onPipe({ FORCE_COLOR: "1" });
    expect(coloured(piped)).toBe(true);
    expect(piped).not.toContain("\r");
    expect(onPipe({})).not.toContain("\u001b");
  });
});

describe("the grant prompt on a terminal", () => {
  it("explains which stage asks for which call and why before it asks", () => {
    const shown = withoutColour(onTerminal({}, "y\n"));
    const explained = shown.indexOf(
      "plan asks for Edit(src/auth.ts): Edit is not among its tools (Read, Grep, Glob).",
    );
    expect(explained).toBeGreaterThan(-1);
    expect(shown.indexOf("[y/N]")).toBeGreaterThan(explained);
    expect(shown).toContain("Edit(src/auth.ts) approved (grant)");
    expect(shown).toMatch(/run run-\S+ done/);
  });
});
