import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll } from "vitest";
import { loadPipelineFile } from "../../../../src/definitions/index.js";
import type { PipelineDefinition } from "../../../../src/definitions/pipeline-types.js";
import { PostgresStore } from "../../../../src/store/postgres/postgres-store.js";
import { MACHINES_DIR } from "../../../support/pipeline-files.js";
import { postgresBinaries, startPostgres, type TestPostgres } from "../../../support/postgres.js";

const binaries = postgresBinaries();
/** Skipped only on a machine without PostgreSQL; CI installs it (.ci/run), where this fails instead. */
export const noPostgres = "missing" in binaries && process.env.CI !== "true";

/** A PostgreSQL server for the file's tests, and its stores, each closed after its test. */
export function sharedStores() {
  let server: TestPostgres;
  const open: PostgresStore[] = [];
  beforeAll(async () => {
    if (noPostgres) return;
    if ("missing" in binaries) throw new Error(binaries.missing);
    server = await startPostgres(binaries.bin);
  });
  afterEach(async () => {
    for (const store of open.splice(0)) await store.close().catch(() => {});
  });
  afterAll(async () => {
    await server?.stop();
  });
  const openStore = async (url: string) => {
    const opened = await PostgresStore.open(url, { poolSize: 4 });
    if (!opened.ok) throw opened.error;
    open.push(opened.value);
    return opened.value;
  };
  return {
    /** A store on a new, empty database, and that database's URL. */
    async fresh() {
      const url = await server.createDatabase();
      return { url, store: await openStore(url) };
    },
    /** Another store on the database at `url`, as another process would open. */
    reopen: openStore,
  };
}

/** The bundled code-review pipeline, loaded from the repository's files (read only). */
export async function bundledCodeReview(): Promise<PipelineDefinition> {
  const loaded = await loadPipelineFile(join(MACHINES_DIR, "code-review.yaml"));
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  return loaded.value;
}

/** Its scripted model's script. */
export const codeReviewScript = () =>
  readFileSync(join(MACHINES_DIR, "code-review.script.yaml"), "utf8");
