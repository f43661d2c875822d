import type { Inspection } from "./inspection.js";

/**
 * `--inspect` attached beside the work that comes before a run (attaching MCP servers, loading
 * and compiling the pipeline): the inspect server is found or started meanwhile, not after it,
 * and the stream buffers until its socket is open. `finish` ends the inspection whatever came
 * of it, a refusal before the run included (a server started for it must not outlive it).
 */
export function inspectionBeside(attaching: Promise<Inspection | undefined>) {
  let runId = "";
  // Handled here; `ready` still hands the failure (a bad port) to the work that awaits it.
  const settled = attaching.catch(() => undefined);
  return {
    ready: (): Promise<Inspection | undefined> => attaching,
    ranAs: (id: string): void => {
      runId = id;
    },
    finish: async (): Promise<void> => (await settled)?.finish(runId),
  };
}
