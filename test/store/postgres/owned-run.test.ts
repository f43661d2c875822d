import { describe, expect, it } from "vitest";
import type { RunStore } from "../../../src/runtime/store-port.js";
import { OwnedRun } from "../../../src/store/postgres/owned-run.js";
import { workerPoolSize } from "../../../src/worker/run-worker.js";
import { noPostgres, sharedStores } from "./support/shared-store.js";

const stores = sharedStores();

/** The store, counting how many of its calls are under way at once (each holds a connection). */
function counted(store: RunStore) {
  let underWay = 0;
  let most = 0;
  const proxy = new Proxy(store, {
    get: (target, key) => {
      const value = Reflect.get(target, key, target);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        underWay += 1;
        most = Math.max(most, underWay);
        try {
          return await value.apply(target, args);
        } finally {
          underWay -= 1;
        }
      };
    },
  });
  return { store: proxy, most: () => most };
}

describe.skipIf(noPostgres)("a run opened on the shared store (OwnedRun)", () => {
  it("loads what it reads one call at a time: beside its claim's renewal, within its share of a worker's pool", async () => {
    const { store } = await stores.fresh();
    const created = await store.createRun({
      runId: "run-1",
      pipelineId: "plan-build",
      definitionHash: "hash-1",
      options: {},
    });
    if (!created.ok) throw created.error;
    await store.commitStep("run-1", {
      events: [{ type: "RunStarted", runId: "run-1", payload: {} }],
      snapshot: { value: "plan" },
      journal: [{ key: "model:run-1/plan/1/a1/t1", value: "reply" }],
    });
    const { store: watched, most } = counted(store);

    const opened = await OwnedRun.open(watched, "run-1", { owner: "worker-a" });
    if (!opened.ok) throw opened.error;
    expect(opened.value.auditOf("run-1")).toHaveLength(1);
    // A run's three connections of the pool (3n + 1): its claim's renewal may hold one meanwhile.
    expect(most()).toBe(1);
    expect(workerPoolSize(1)).toBe(4);
    await opened.value.close();
  });
});
