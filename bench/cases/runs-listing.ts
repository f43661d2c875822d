import { join } from "node:path";
import { main } from "../../src/cli/main.js";
import { SqliteStore } from "../../src/store/index.js";
import { timeSideBySide } from "../measure.js";
import { type Comparison, compare } from "../report.js";

/** Options as large as a CLI run stores (pipeline file, model spec, ctx, definition hashes). */
const OPTIONS = {
  definition: Object.fromEntries(
    Array.from({ length: 60 }, (_, i) => [`stage ${i}`, "0123456789abcdef"]),
  ),
};

/** `stagechart runs --json` (its default page) over a store of `many` runs against one of 10. */
export async function runsListing(dir: string, many: number): Promise<Comparison> {
  const few = storeOf(join(dir, "runs-10.db"), 10);
  const lots = storeOf(join(dir, `runs-${many}.db`), many);
  let printed = 0;
  const io = {
    stdout: (text: string) => {
      printed += text.length;
    },
    stderr: () => undefined,
  };
  const list = (path: string) => async () => {
    const code = await main(["runs", "--json", "--store", path], io);
    if (code !== 0) throw new Error(`runs exited ${code}`);
  };
  const [small, large] = await timeSideBySide(
    { name: "10 runs", fn: list(few) },
    { name: `${many} runs`, fn: list(lots) },
  );
  printed = 0;
  await list(lots)();
  return compare(
    `runs --json over ${many} stored runs`,
    "ms",
    { label: "10 runs", value: small.medianMs },
    { label: `${many} runs`, value: large.medianMs },
    { printedBytes: printed, goalRatio: 1 },
  );
}

function storeOf(path: string, runs: number): string {
  const opened = SqliteStore.open(path);
  if (!opened.ok) throw opened.error;
  for (let i = 0; i < runs; i++)
    opened.value.createRun({
      runId: `run-${i}`,
      pipelineId: "bench",
      definitionHash: "hash",
      options: OPTIONS,
    });
  opened.value.close();
  return path;
}
