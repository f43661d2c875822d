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
type Writable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * `machine.provide(implementations)`, without building the machine again: one compiled
 * pipeline's states serve many runs, each with its own services. XState's `provide` builds every
 * state node and transition of the machine anew (a tenth of a short run's time); XState reads a
 * machine's implementations from the machine an actor runs (its snapshot's `machine`), and its
 * states only for their structure, so the provided machine is the compiled one with its own
 * implementations: an object whose prototype is the compiled machine, with the methods the
 * machine binds to itself bound to it instead. Its `start` also starts the settled children of a
 * restored snapshot (`startTakingSettledChildren`).
 */
export function withImplementations<M extends AnyStateMachine>(
  machine: M,
  implementations: Implementations,
): M {
  const provided = Object.create(machine) as Writable<AnyStateMachine>;
  const own = machine.implementations;
  provided.implementations = {
    actions: { ...own.actions, ...implementations.actions },
    guards: { ...own.guards, ...implementations.guards },
    actors: { ...own.actors, ...implementations.actors },
    delays: { ...own.delays, ...implementations.delays },
  };
  const methods = StateMachine.prototype as unknown as Record<string, unknown>;
  const bound = provided as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(machine)) {
    const method = methods[key];
    if (typeof value === "function" && typeof method === "function")
      bound[key] = method.bind(provided);
  }
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
