/** Where the CLI writes; tests pass their own, the binary passes the process streams. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

export const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/** Exit codes of DESIGN.md §9. */
export const EXIT = { done: 0, failed: 1, usage: 2, suspended: 3 } as const;
