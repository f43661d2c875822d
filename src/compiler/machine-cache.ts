import type { AnyActorRef, AnyStateMachine } from "xstate";

/**
 * Compiled machines kept by key (a definition's hash): each key is compiled once, and past
 * `capacity` keys the least recently used is forgotten. `compiles` counts the misses.
 */
export class MachineCache<M> {
  private readonly machines = new Map<string, M>();
  compiles = 0;

  constructor(private readonly capacity: number) {}

  get(key: string, compile: () => M): M {
    const kept = this.machines.get(key);
    if (kept !== undefined) {
      // A Map iterates in insertion order: put back, the key becomes the most recently used.
      this.machines.delete(key);
      this.machines.set(key, kept);
      return kept;
    }
    const machine = compile();
    this.compiles += 1;
    this.machines.set(key, machine);
    if (this.machines.size > this.capacity) {
      const [oldest] = this.machines.keys();
      if (oldest !== undefined) this.machines.delete(oldest);
    }
    return machine;
  }
}

type Implementations = Partial<AnyStateMachine["implementations"]>;
type Providing = { provide(implementations: Implementations): AnyStateMachine };

/**
 * `machine.provide(implementations)`: one compiled pipeline's states serve many runs, each with
 * its own services. The provided machine's `start` also starts the settled children of a
 * restored snapshot (`startTakingSettledChildren`).
 */
export function withImplementations<M extends AnyStateMachine>(
  machine: M,
  implementations: Implementations,
): M {
  // Called through a loose type: instantiating `provide`'s own signature for the pipeline
  // machine's types made TypeScript infer the group actions' types differently (errors in
  // pipeline-group-run.ts), and the caller keeps its machine's type anyway.
  const provided = (machine as unknown as Providing).provide(implementations);
  provided.start = startTakingSettledChildren(provided.start);
  return provided as M;
}

/**
 * XState's `start` (which starts a restored snapshot's active children), then the snapshot's
 * settled children (done or failed) too, so that they hand the actor their done or error event
 * again.
 *
 * A snapshot an app persists while one of these machines is between the moment a child settled
 * and the end of the transition that takes the child's event (an audit listener runs there) holds
 * the machine in the state before that transition with the child already settled. Our machines
 * stop every child whose event they took, so a settled child still held was not taken. XState
 * restores it but does not start it, and nothing would ever move the machine on; a settled actor
 * that starts relays its event to its parent (queued until the parent's mailbox opens), so the
 * restored machine takes that transition again. Its actions run again: a step the snapshot had
 * not kept is redone, as for any snapshot older than the run's last step (the journal answers
 * its calls).
 */
function startTakingSettledChildren(start: AnyStateMachine["start"]): AnyStateMachine["start"] {
  return (snapshot, ...rest) => {
    start(snapshot, ...rest);
    const { children } = snapshot as { children: Record<string, AnyActorRef | undefined> };
    for (const child of Object.values(children)) {
      const status = child?.getSnapshot().status;
      if (status === "done" || status === "error") child?.start();
    }
  };
}
