import { argsDigest } from "../compiler/act-rules.js";
import type { GrantRequest } from "../compiler/stage-types.js";
import type { JsonValue } from "../definitions/contract.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import type { RunStore } from "../runtime/store-port.js";
import type { LiveRegistry } from "./live.js";
import { describeStoredRun } from "./run-view.js";

/** A grant request as the page's banner shows it: why it is asked, and the call's arguments. */
export interface GrantView {
  proposalId: string;
  stageId: string;
  tool: string;
  /** Why the call needs a grant: `Edit is not among plan's tools (Read, Grep, Glob)`. */
  reason: string;
  /**
   * The call's arguments as the stage's transcript holds them: taken from the model's reply after
   * the model's keys were removed, as the audit's summary is. Absent for a code or command
   * stage's call (it has no transcript), or before the transcript is stored.
   */
  args?: JsonValue;
  /** When nobody answering is taken as the grants block's timeout fallback (ISO time). */
  deadline?: string;
}

/** Why a call needs a grant: no envelope of its stage covers it. */
export function grantReason(request: Pick<GrantRequest, "stageId" | "tool" | "envelope">): string {
  const { stageId, tool, envelope } = request;
  if (envelope === undefined)
    return `${stageId} is a code or command stage, with no tools of its own: the security mode asks for each call`;
  if (envelope.length === 0) return `${stageId} may call no tools`;
  return `${tool} is not among ${stageId}'s tools (${envelope.join(", ")})`;
}

/**
 * The grant request `proposalId` that run `runId` waits on — live (a page answers the run's
 * process) or suspended — with its reason and the call's arguments; `Session/NoPendingGrant`
 * when the run waits on no such request.
 */
export async function grantViewOf(
  store: RunStore,
  live: LiveRegistry,
  runId: string,
  proposalId: string,
): Promise<Result<GrantView>> {
  const request = await waitingGrant(store, live, runId, proposalId);
  if (!request)
    return err(
      new StagechartError(
        "Session/NoPendingGrant",
        `run ${runId} has no grant request ${proposalId} waiting`,
        { runId, proposalId },
      ),
    );
  const args = await callArgs(store, request);
  return ok({
    proposalId,
    stageId: request.stageId,
    tool: request.tool,
    reason: grantReason(request),
    ...(args !== undefined && { args }),
    ...(request.deadline !== undefined && { deadline: request.deadline }),
  });
}

async function waitingGrant(
  store: RunStore,
  live: LiveRegistry,
  runId: string,
  proposalId: string,
): Promise<GrantRequest | undefined> {
  const asked = live.pendingOf(runId).find((g) => g.proposalId === proposalId);
  if (asked) return asked;
  const run = await describeStoredRun(store, runId);
  if (!run.ok) return undefined;
  return run.value.waiting?.find(
    (w): w is Extract<typeof w, { kind: "grant" }> =>
      w.kind === "grant" && w.proposalId === proposalId,
  );
}

/** The arguments of the stage's last proposed call with the request's tool and digest. */
async function callArgs(store: RunStore, request: GrantRequest): Promise<JsonValue | undefined> {
  const transcript = await store.read(request.stageExecutionId);
  for (const entry of [...transcript].reverse()) {
    if (entry.role !== "assistant") continue;
    const call = entry.calls.find(
      (c) => c.tool === request.tool && argsDigest(c.args) === request.argsDigest,
    );
    if (call) return call.args;
  }
  return undefined;
}
