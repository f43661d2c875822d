import { type AnyActorRef, type AnyStateMachine, StateMachine } from "xstate";

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

/** The methods a StateMachine binds to itself when constructed; a copy binds them to the copy. */
const SELF_BOUND = [
  "transition",
  "getInitialSnapshot",
  "getPersistedSnapshot",
  "restoreSnapshot",
  "start",
] as const;

/**
 * What `machine.provide(implementations)` returns, without building its state nodes again: the
 * copy shares the compiled states and differs only in its implementations. XState looks every
 * action, guard, actor and delay up on the snapshot's machine, so the copy's snapshots (made by
 * its own methods, bound to it) use the copy's. This is how one compiled pipeline serves many
 * runs, each with its own services.
 */
export function withImplementations<M extends AnyStateMachine>(
  machine: M,
  implementations: Implementations,
): M {
  const copy = Object.create(machine) as M & Record<string, unknown>;
  const prototype = StateMachine.prototype as unknown as Record<string, () => unknown>;
  for (const method of SELF_BOUND)
    (copy as Record<string, unknown>)[method] = prototype[method]?.bind(copy);
  (copy as Record<string, unknown>).start = startTakingSettledChildren(copy);
  const own = machine.implementations;
  (copy as { implementations: AnyStateMachine["implementations"] }).implementations = {
    actors: { ...own.actors, ...implementations.actors },
    actions: { ...own.actions, ...implementations.actions },
    guards: { ...own.guards, ...implementations.guards },
    delays: { ...own.delays, ...implementations.delays },
  };
  return copy;
}

/**
 * XState's `start`, which starts a restored snapshot's active children, that then also starts
 * its settled ones (done or failed) so that they hand the actor their done or error event again.
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
function startTakingSettledChildren(machine: AnyStateMachine) {
  const start = StateMachine.prototype.start;
  return (snapshot: { children: Record<string, AnyActorRef | undefined> }) => {
    start.call(machine, snapshot as Parameters<typeof start>[0]);
    for (const child of Object.values(snapshot.children)) {
      const status = child?.getSnapshot().status;
      if (status === "done" || status === "error") child?.start();
    }
  };
}
