// Package pleg/ — kubelet's PLEG: relist (relist.ts) plus the runtime's event stream (pleg-events.ts, evented.ts),
// producing pod lifecycle events and views; and the desired-state port. Syncs nothing; never imports the sync loop.
//
// The PLEG as one part (kubelet's GenericPLEG and EventedPLEG, pkg/kubelet/pleg/generic.go and evented.go): the
// relist's view of the node, which pod owns each sandbox and container id (for the runtime's events, which name only
// the id), and the event stream's pod lifecycle events handed to the sync loop (`on`). It knows nothing of desired
// pods or workers: the sync loop decides what an event or a view means.
import type { CriClient } from "../cri/client.js";
import type { PodStatus } from "../container/types.js";
import type { NodeMetrics } from "../metrics/metrics.js";
import type { Owner } from "./evented.js";
import { startEventedPleg, type EventedPlegOptions, type PodLifecycleHandler } from "./pleg-events.js";
import { createRelister, type Relist, type RelistInterest } from "./relist.js";

export interface PlegOptions {
  cri: CriClient;
  /** Subscribe to the runtime's events; none: the relist alone. */
  events?: EventedPlegOptions["events"];
  metrics?: NodeMetrics | undefined;
  now: () => number;
  stopped(): boolean;
  /** No event stream at all (the caller drives the relist: the Workers node object's alarm, tests, bench). */
  manual?: boolean | undefined;
  /** Where the pod lifecycle events go (kubelet's plegCh, read by syncLoopIteration). */
  on: PodLifecycleHandler;
}

export interface Pleg {
  /** One relist (2 CRI calls when every detail is cached): the view of the pods `interest` names. */
  relist(interest: RelistInterest): Promise<Relist>;
  /** What a sync read back: its details need not be read again, and its new ids' exits find their pod. */
  learn(status: PodStatus): void;
  close(): void;
  /** Resolves when no event's sync is running. */
  idle(): Promise<void>;
}

export function createPleg(o: PlegOptions): Pleg {
  const relister = createRelister(o.cri);
  /** Which pod each sandbox and container id belongs to: the last relist's, plus what syncs made since. */
  let owners = new Map<string, Owner>();
  /** Owners a sync (the loop's or a request's) made known, with when: a relist whose lists went out before then
   * has not seen them, and must not drop them (the exit of a container made meanwhile would have no owner). */
  const learnt = new Map<string, Owner & { at: number }>();
  const own = (status: PodStatus) => {
    const at = o.now();
    for (const sb of status.sandboxStatuses) {
      owners.set(sb.id, { uid: status.id, sandbox: true });
      learnt.set(sb.id, { uid: status.id, sandbox: true, at });
    }
    for (const c of status.containerStatuses) {
      owners.set(c.id, { uid: status.id, sandbox: false });
      learnt.set(c.id, { uid: status.id, sandbox: false, at });
    }
  };
  const events = o.manual
    ? undefined
    : startEventedPleg({
        cri: o.cri,
        events: o.events,
        metrics: o.metrics,
        ownerOf: (id) => owners.get(id),
        stopped: o.stopped,
        on: o.on,
      });
  return {
    async relist(interest) {
      const view = await relister.relist(interest, o.now);
      owners = view.owners;
      for (const [id, l] of learnt) {
        if (l.at <= view.at)
          learnt.delete(id); // listed after it was learnt: the view has it if it still exists
        else if (!owners.has(id)) owners.set(id, { uid: l.uid, sandbox: l.sandbox });
      }
      return view;
    },
    learn(status) {
      relister.learn(status);
      own(status);
    },
    close: () => events?.close(),
    idle: async () => {
      await events?.idle();
    },
  };
}
