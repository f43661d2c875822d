import type { AnyActorRef } from "xstate";

/** What a watched actor's latest snapshot says, as far as a run's launch cares. */
export interface WatchedSnapshot {
  status?: string;
  hasTag?(tag: string): boolean;
  children?: Record<string, AnyActorRef | undefined>;
}

/**
 * Calls `changed` after every snapshot of the root and of each state machine in its tree (stages,
 * spawned siblings, ask stages), and once more when one stops or fails (with no snapshot). Each
 * machine is subscribed to as it appears among its parent's children, and `changed` is told its
 * snapshot then. Promise actors are left out:
 * whatever they settle reaches their parent as an event, which changes the parent's snapshot.
 *
 * This replaces a root `inspect` hook, through which XState would build and hand over an
 * inspection event for every event, action and microstep of every actor in the run.
 */
export function watchMachines(
  root: AnyActorRef,
  changed: (actor: AnyActorRef, snapshot?: WatchedSnapshot) => void,
): void {
  const watched = new WeakSet<AnyActorRef>();
  const childrenSeen = new WeakMap<AnyActorRef, object>();
  const watchNewChildren = (actor: AnyActorRef, snapshot: WatchedSnapshot) => {
    const children = snapshot.children;
    if (!children || childrenSeen.get(actor) === children) return;
    childrenSeen.set(actor, children);
    for (const id in children) {
      const child = children[id];
      if (!child || watched.has(child)) continue;
      const first = child.getSnapshot() as WatchedSnapshot;
      if (!isMachineSnapshot(first)) continue;
      watch(child);
      // It may have moved before anybody watched it (a restored or freshly started machine).
      changed(child, first);
    }
  };
  const watch = (actor: AnyActorRef) => {
    watched.add(actor);
    const gone = () => changed(actor);
    actor.subscribe({
      next: (snapshot: WatchedSnapshot) => {
        watchNewChildren(actor, snapshot);
        changed(actor, snapshot);
      },
      // Handled here so that subscribing does not change how XState reports a failure: the
      // parent hears of it as an error event either way.
      error: gone,
      complete: gone,
    });
    watchNewChildren(actor, actor.getSnapshot() as WatchedSnapshot);
  };
  watch(root);
}

const isMachineSnapshot = (snapshot: WatchedSnapshot | undefined): boolean =>
  typeof snapshot?.children === "object";
