import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { bashTool } from "../../src/tools/bash.js";
import {
  type BashConfinement,
  bashConfinement,
  DEFAULT_SANDBOX,
} from "../../src/tools/bash-sandbox.js";
import { invokeTool } from "../../src/tools/index.js";
import { codeOf, makeProject, outputOf, type Project } from "./project.js";

const ON_CI = process.env.CI === "true";
const available = bashConfinement({ ...DEFAULT_SANDBOX, mode: "required" });
const missing = available.sandboxed ? undefined : available.reason;
const UNCONFINED: BashConfinement = {
  sandboxed: false,
  mode: "off",
  reason: "turned off",
  bash: "unconfined",
};

/** Files a test put outside its tmp world (home, system directories), removed afterwards. */
const placed: string[] = [];
afterEach(() => {
  for (const file of placed.splice(0)) rmSync(file, { force: true });
});
const unique = (name: string) => `${name}-${process.pid}-${String(Math.random()).slice(2, 10)}`;

/** A TCP server on the host's loopback that counts the connections it gets. */
let server: Server;
let connections = 0;
beforeAll(async () => {
  server = createServer((socket) => {
    connections += 1;
    socket.end("hello from the host\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
const port = () => (server.address() as { port: number }).port;

interface Escape {
  name: string;
  /** The command, given the world around the root. */
  command(project: Project): string;
  /** Whether the command got out, judged from its output and the host's file system. */
  escaped(project: Project, output: string): boolean;
  /** Harmless to run unconfined (as root, a mount or a write to /usr would change the host). */
  safeUnconfined: boolean;
}

const SECRET = "secret outside";
const shows = (text: string) => (_: Project, output: string) => output.includes(text);

const ESCAPES: Escape[] = [
  {
    name: "cd / and cat a file beside the root",
    command: (p) => `cd / && cat ${p.outside}/secret.txt`,
    escaped: shows(SECRET),
    safeUnconfined: true,
  },
  {
    name: "cat ../ out of the root",
    command: () => "cat ../outside/secret.txt ../outside.txt",
    escaped: (_, output) => output.includes(SECRET) || output.includes("next to the root"),
    safeUnconfined: true,
  },
  {
    name: "cat through a link in the root that points outside",
    command: () => "cat link-out.txt link-dir/inner.txt",
    escaped: (_, output) => output.includes(SECRET) || output.includes("inner secret"),
    safeUnconfined: true,
  },
  {
    name: "list the directory around the root",
    command: (p) => `ls -a ${p.world}`,
    escaped: shows("outside"),
    safeUnconfined: true,
  },
  {
    name: "read the home directory",
    command: () => {
      const canary = join(homedir(), unique(".stagechart-canary"));
      writeFileSync(canary, "home canary\n");
      placed.push(canary);
      return `cat ${canary} ~/${canary.slice(homedir().length + 1)} 2>/dev/null; ls -a ~ /root /home 2>/dev/null`;
    },
    escaped: (_, output) => output.includes("home canary") || output.includes(".stagechart"),
    safeUnconfined: true,
  },
  {
    name: "read the host's /tmp",
    command: () => {
      const file = join("/tmp", unique("stagechart-host-tmp"));
      writeFileSync(file, "host tmp file\n");
      placed.push(file);
      return `cat ${file}`;
    },
    escaped: shows("host tmp file"),
    safeUnconfined: true,
  },
  {
    name: "read the host's files through /proc of the host's process",
    command: (p) =>
      `cat /proc/${process.pid}/root${p.outside}/secret.txt /proc/${process.pid}/cmdline`,
    escaped: (_, output) => output.includes(SECRET) || output.includes("vitest"),
    safeUnconfined: true,
  },
  {
    name: "signal a host process",
    command: () => `kill -0 ${process.pid} && echo reached-host-process`,
    escaped: shows("reached-host-process"),
    safeUnconfined: true,
  },
  {
    name: "read what in /etc only root may read",
    command: () => "cat /etc/shadow /etc/gshadow",
    escaped: (_, output) => /^root:/m.test(output),
    // Only root reads these unconfined; for anyone else the control below would not hold.
    safeUnconfined: process.getuid?.() === 0,
  },
  {
    name: "write a file beside the root",
    command: (p) => `echo x > ${p.outside}/planted.txt; echo x > ../planted.txt`,
    escaped: (p) =>
      existsSync(join(p.outside, "planted.txt")) || existsSync(join(p.world, "planted.txt")),
    safeUnconfined: true,
  },
  {
    name: "write through a link that points outside",
    command: () => "echo x > link-dir/planted.txt; echo x > dangling-out.txt",
    escaped: (p) =>
      existsSync(join(p.outside, "dir", "planted.txt")) ||
      existsSync(join(p.outside, "not-yet.txt")),
    safeUnconfined: true,
  },
  {
    name: "write into the host's /tmp",
    command: () => {
      const file = join("/tmp", unique("stagechart-planted"));
      placed.push(file);
      return `echo x > ${file}`;
    },
    escaped: () => placed.some((file) => existsSync(file)),
    safeUnconfined: true,
  },
  {
    name: "write into the system directories",
    command: () => {
      const files = ["/usr", "/etc", "/opt"].map((dir) => join(dir, unique("stagechart-planted")));
      placed.push(...files);
      return files.map((file) => `touch ${file}`).join("; ");
    },
    escaped: () => placed.some((file) => existsSync(file)),
    safeUnconfined: false,
  },
  {
    name: "write at the file system's top",
    command: () => {
      const file = join("/", unique("stagechart-planted"));
      placed.push(file);
      return `touch ${file}`;
    },
    escaped: () => placed.some((file) => existsSync(file)),
    safeUnconfined: false,
  },
  {
    name: "unmount the private /tmp to reach the host's",
    command: (p) => `umount -l /tmp; cat ${p.outside}/secret.txt`,
    escaped: shows(SECRET),
    safeUnconfined: false,
  },
  {
    name: "mount the host's root somewhere",
    command: (p) => `mkdir -p /tmp/m && mount --bind / /tmp/m && cat /tmp/m${p.outside}/secret.txt`,
    escaped: shows(SECRET),
    safeUnconfined: false,
  },
  {
    name: "reach a server on the host's loopback",
    command: () => `exec 3<>/dev/tcp/127.0.0.1/${port()} && head -1 <&3`,
    escaped: (_, output) => output.includes("hello from the host"),
    safeUnconfined: true,
  },
];

async function runIn(project: Project, sandbox: BashConfinement, command: string) {
  const outcome = await invokeTool(bashTool, { command }, { ...project.context(), sandbox });
  const output = outputOf(outcome);
  return `${String(output.stdout)}\n${String(output.stderr)}`;
}

describe.skipIf(missing !== undefined && !ON_CI)(
  `Bash inside the sandbox${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    it("has bubblewrap to run in (CI installs it)", () => {
      expect(missing).toBeUndefined();
    });

    it.each(ESCAPES)("cannot $name", async (attempt) => {
      const project = makeProject();
      const before = project.outsideSnapshot();
      const connected = connections;
      const output = await runIn(project, available, attempt.command(project));
      expect(attempt.escaped(project, output), output).toBe(false);
      expect(project.outsideSnapshot()).toEqual(before);
      expect(connections).toBe(connected);
    });

    it("still works in the root: reads, writes, runs system programs and follows links inside", async () => {
      const project = makeProject({ "src/a.txt": "inside\n" });
      const command =
        "ln -s src alias && cat alias/a.txt && echo made > new.txt && expr 6 '*' 7 && " +
        "echo scratch > /tmp/s && cat /tmp/s && pwd";
      const output = await runIn(project, available, command);
      expect(output).toBe(`inside\n42\nscratch\n${project.root}\n\n`);
      expect(project.read("new.txt")).toBe("made\n");
    });

    it("reaches the network when the host allows it", async () => {
      const project = makeProject();
      const networked = bashConfinement({ ...DEFAULT_SANDBOX, mode: "required", network: true });
      expect(networked.sandboxed).toBe(true);
      const output = await runIn(
        project,
        networked,
        `exec 3<>/dev/tcp/127.0.0.1/${port()} && head -1 <&3`,
      );
      expect(output).toContain("hello from the host");
    });

    it("is what a tool call gets by default, without a sandbox in its context", async () => {
      const project = makeProject();
      const outcome = await invokeTool(
        bashTool,
        { command: "ls -a /root /home" },
        project.context(),
      );
      expect(outputOf(outcome).stdout).toBe("");
    });

    it("unconfined, the same commands do get out (the escapes are real)", async () => {
      const got: string[] = [];
      for (const attempt of ESCAPES.filter((candidate) => candidate.safeUnconfined)) {
        const project = makeProject();
        const output = await runIn(project, UNCONFINED, attempt.command(project));
        if (attempt.escaped(project, output)) got.push(attempt.name);
        for (const file of placed.splice(0)) rmSync(file, { force: true });
      }
      expect(got).toEqual(ESCAPES.filter((e) => e.safeUnconfined).map((e) => e.name));
    });
  },
);

describe("when the sandbox cannot be used", () => {
  /** A stand-in for bwrap that records each call and fails the way `then` says. */
  function fakeBwrap(project: Project, then: string): string {
    const file = join(project.world, "fake-bwrap");
    writeFileSync(file, `#!/bin/sh\necho called >> ${project.world}/calls\n${then}\n`);
    chmodSync(file, 0o755);
    return file;
  }
  const callsOf = (project: Project) =>
    existsSync(join(project.world, "calls"))
      ? readFileSync(join(project.world, "calls"), "utf8").split("\n").filter(Boolean).length
      : 0;

  /** Bash's outcome for a command that would leave a marker in the root. */
  const markerRun = async (project: Project, sandbox: BashConfinement) => {
    const outcome = await invokeTool(
      bashTool,
      { command: "echo ran > marker" },
      { ...project.context(), sandbox },
    );
    return { outcome, ran: existsSync(join(project.root, "marker")) };
  };

  it("refuses Bash where bubblewrap is not installed, saying how to install it", async () => {
    const project = makeProject();
    const bwrap = join(project.world, "no-such-bwrap");
    const confinement = bashConfinement({ ...DEFAULT_SANDBOX, bwrap });
    expect(confinement).toEqual({
      sandboxed: false,
      mode: "auto",
      reason: `bubblewrap (${bwrap}) is not installed`,
      bash: "refused",
    });
    const { outcome, ran } = await markerRun(project, confinement);
    expect(codeOf(outcome)).toBe("ToolTerminal/SandboxUnavailable");
    expect(outcome.ok ? "" : outcome.error.message).toContain("apt-get install bubblewrap");
    expect(outcome.ok ? "" : outcome.error.message).toContain("--unconfined-bash");
    expect(ran).toBe(false);
  });

  it("refuses Bash where bubblewrap is there but cannot make namespaces", async () => {
    const project = makeProject();
    const bwrap = fakeBwrap(
      project,
      "echo 'bwrap: No permissions to creating new namespace' >&2; exit 1",
    );
    const { outcome, ran } = await markerRun(
      project,
      bashConfinement({ ...DEFAULT_SANDBOX, bwrap }),
    );
    expect(codeOf(outcome)).toBe("ToolTerminal/SandboxUnavailable");
    expect(outcome.ok ? "" : outcome.error.message).toContain("user namespaces");
    expect(ran).toBe(false);
  });

  it("runs Bash unconfined where bubblewrap cannot run only when the host allows it", async () => {
    const project = makeProject();
    const bwrap = join(project.world, "no-such-bwrap");
    const confinement = bashConfinement({ ...DEFAULT_SANDBOX, bwrap, allowUnconfined: true });
    expect(confinement).toEqual({
      sandboxed: false,
      mode: "auto",
      reason: `bubblewrap (${bwrap}) is not installed`,
      bash: "unconfined",
    });
    const output = await runIn(project, confinement, `cat ${project.outside}/secret.txt`);
    expect(output).toContain(SECRET);
  });

  it("keeps Bash refused under a host that requires the sandbox, allowed unconfined or not", async () => {
    const project = makeProject();
    const bwrap = join(project.world, "no-such-bwrap");
    const settings = { ...DEFAULT_SANDBOX, bwrap, mode: "required" as const };
    const confinement = bashConfinement({ ...settings, allowUnconfined: true });
    const { outcome, ran } = await markerRun(project, confinement);
    expect(codeOf(outcome)).toBe("ToolTerminal/SandboxUnavailable");
    expect(ran).toBe(false);
  });

  it("says why bubblewrap failed when it cannot make namespaces", () => {
    const project = makeProject();
    const bwrap = fakeBwrap(
      project,
      "echo 'bwrap: No permissions to creating new namespace' >&2; exit 1",
    );
    const confinement = bashConfinement({ ...DEFAULT_SANDBOX, bwrap });
    expect(confinement.sandboxed ? "sandboxed" : confinement.reason).toBe(
      `bubblewrap (${bwrap}) cannot create a sandbox here (user namespaces may be disabled): bwrap: No permissions to creating new namespace`,
    );
  });

  it("tries bubblewrap once and remembers the answer", () => {
    const project = makeProject();
    const bwrap = fakeBwrap(project, "exit 1");
    bashConfinement({ ...DEFAULT_SANDBOX, bwrap });
    bashConfinement({ ...DEFAULT_SANDBOX, bwrap, mode: "required" });
    expect(callsOf(project)).toBe(1);
  });

  it("does not try bubblewrap when the host turned the sandbox off", () => {
    const project = makeProject();
    const bwrap = fakeBwrap(project, "exit 0");
    expect(bashConfinement({ ...DEFAULT_SANDBOX, bwrap, mode: "off" })).toEqual({
      sandboxed: false,
      mode: "off",
      reason: "the host turned the sandbox off",
      bash: "unconfined",
    });
    expect(callsOf(project)).toBe(0);
  });

  it("refuses Bash with ToolTerminal/SandboxUnavailable when the host requires the sandbox", async () => {
    const project = makeProject();
    const bwrap = join(project.world, "no-such-bwrap");
    const sandbox = bashConfinement({ ...DEFAULT_SANDBOX, bwrap, mode: "required" });
    const outcome = await invokeTool(
      bashTool,
      { command: "echo ran > marker" },
      { ...project.context(), sandbox },
    );
    expect(codeOf(outcome)).toBe("ToolTerminal/SandboxUnavailable");
    expect(outcome.ok ? "" : outcome.error.message).toContain("not installed");
    expect(existsSync(join(project.root, "marker"))).toBe(false);
  });
});
