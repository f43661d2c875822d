export { MIGRATIONS, type Migration, SCHEMA_VERSION } from "./migrations.js";
export { isPostgresUrl, type OpenStoreOptions, openStore } from "./open-store.js";
export { OwnedRun } from "./postgres/owned-run.js";
export { PostgresStore, type PostgresStoreOptions } from "./postgres/postgres-store.js";
export {
  startWorkerPool,
  type WorkerPool,
  type WorkerPoolOptions,
} from "./postgres/worker-pool.js";
export {
  DEFAULT_STORE_PATH,
  SqliteStore,
  type StepCommit,
  type StoreOptions,
} from "./sqlite-store.js";
