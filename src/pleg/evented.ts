// The event-driven half of the PLEG, as kubelet's Evented PLEG (pkg/kubelet/pleg/evented.go): a container
// exit the runtime reports triggers that pod's sync at once, instead of waiting for the next relist to see it.
// The relist stays as the safety net (the loop relists less often while the stream is up, and at its normal
// interval, at once, when it goes down).
//
//   - Which pod: the event's own pod uid (CRI events carry the sandbox status), else the owner the loop last saw
//     for that container or sandbox id (from relists and syncs). An exit of an id nobody knows (a container made
//     since the last relist, by a request) asks for a relist instead.
//   - Settled: containerd 1.6's TaskExit comes before the CRI plugin records the exit (100-200 ms before). A
//     container's exit that carries its status and time syncs at once with that exit applied to what CRI reads
//     (kuberuntime/reported-exits.ts); what follows the sync (the loop's relist) waits until CRI shows it (a
//     short poll of that one object). A sandbox's exit, or one without them, waits for CRI before its sync, or
//     the sync would find it still running.
//   - Coalesced per pod: while a pod's trigger is waiting or syncing, further exits only join it; after the sync,
//     one more sync runs if exits arrived meanwhile. 100 containers of one pod exiting at once make one or two
//     syncs, not 100 (kubelet's pod workers likewise keep one pending update per pod).
import type { ContainerEvent, RuntimeExit } from "../cri/container-events.js";
import type { ReportedExits } from "../kuberuntime/reported-exits.js";

export interface Owner {
  uid: string;
  /** The id is the pod's sandbox (its pause task), not a container. */
  sandbox: boolean;
}

export interface EventTriggerOptions {
  ownerOf(id: string): Owner | undefined;
  /** Whether CRI's status shows the object stopped (or gone). */
  stopped(id: string, sandbox: boolean): Promise<boolean>;
  /** Sync the pod now (through the loop, so the per-pod lock and its bookkeeping apply). `exited`: the exits
   * the runtime reported that CRI may not show yet, by container id. */
  sync(uid: string, reason: string, exited: ReportedExits | undefined): Promise<void>;
  /** An exit of an id no pod is known to own: relist soon. */
  unknown(): void;
  /** Waits between settle checks (ms); default every 10 ms for 300 ms, then 20, 40, ... up to about 2.8 s. */
  settleDelaysMs?: readonly number[];
  sleep?: (ms: number) => Promise<void>;
}

export interface EventTrigger {
  handle(e: ContainerEvent): void;
  /** Pods with a trigger waiting or syncing. */
  readonly busy: number;
  /** Resolves when no trigger is running. */
  idle(): Promise<void>;
  /** Resolves once CRI's status shows the container (or sandbox) stopped or gone, or the checks run out. */
  settle(id: string, sandbox: boolean): Promise<void>;
}

// containerd 1.6's CRI records an exit 130-220 ms after its TaskExit here (it deletes the task first): a check every
// 10 ms over that span finds it within 10 ms (one ContainerStatus each); doubling from the start would have checked
// at 150 and then 310 ms.
const DEFAULT_SETTLE = [...Array<number>(30).fill(10), 20, 40, 80, 160, 320, 640, 1280];

interface Exit {
  settled: boolean;
  sandbox: boolean;
  exit: RuntimeExit | undefined;
}

export function createEventTrigger(o: EventTriggerOptions): EventTrigger {
  const delays = o.settleDelaysMs ?? DEFAULT_SETTLE;
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  /** Per pod: the exits not yet synced (id → whether CRI already shows it, and how it ended if the event says). */
  const pods = new Map<string, Map<string, Exit>>();
  const running = new Set<Promise<void>>();

  async function settle(id: string, sandbox: boolean): Promise<void> {
    for (const ms of delays) {
      if (await o.stopped(id, sandbox).catch(() => true)) return;
      await sleep(ms);
    }
  }

  async function run(uid: string, exits: Map<string, Exit>): Promise<void> {
    try {
      while (exits.size) {
        const batch = [...exits];
        exits.clear();
        const reported = new Map<string, RuntimeExit>();
        for (const [id, x] of batch) if (!x.settled && !x.sandbox && x.exit) reported.set(id, x.exit);
        await Promise.all(
          batch.filter(([id, x]) => !x.settled && !reported.has(id)).map(([id, x]) => settle(id, x.sandbox)),
        );
        await o.sync(
          uid,
          batch.some(([, x]) => x.sandbox) ? "sandbox exited" : "container exited",
          reported.size ? reported : undefined,
        );
      }
    } finally {
      pods.delete(uid);
    }
  }

  return {
    handle(e) {
      if (e.kind !== "exited") return;
      const owner = e.podUid ? { uid: e.podUid, sandbox: o.ownerOf(e.id)?.sandbox ?? false } : o.ownerOf(e.id);
      if (!owner) return o.unknown();
      const queued = pods.get(owner.uid);
      if (queued) {
        queued.set(e.id, { settled: e.settled, sandbox: owner.sandbox, exit: e.exit });
        return;
      }
      const exits = new Map<string, Exit>([[e.id, { settled: e.settled, sandbox: owner.sandbox, exit: e.exit }]]);
      pods.set(owner.uid, exits);
      const job = run(owner.uid, exits).catch(() => undefined); // the loop's sync reports its own failures
      running.add(job);
      void job.finally(() => running.delete(job));
    },
    get busy() {
      return pods.size;
    },
    async idle() {
      while (running.size) await Promise.all([...running]);
    },
    settle,
  };
}
