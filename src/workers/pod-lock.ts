// DurablePodLock, the Worker's PodLock over the PodSerializer object. Guarantees: no holder starts a runtime
// write after its lease may have expired, so two holders never act on one pod at once.
import { PodBusyError, type PodLock } from "../kuberuntime/pod-lock.js";
import type { DONamespace } from "./durable-object.js";
import { LeaseFence } from "./lease-fence.js";

/** Per-pod lock: a Durable Object per node/pod uid hands out one lease at a time. A lease expires unless
 * renewed, so a vanished holder cannot wedge the pod; a live holder renews it every quarter lease while it
 * runs (a slow pull or a long grace period may take many leases), and is fenced (no further runtime write,
 * calls in flight cancelled) once a renewal is refused or none has succeeded in time. Guaranteed: no holder
 * starts a write after its lease may have expired, so two holders never act on the pod at once; a write
 * already received by the runtime when the lease is lost may still complete. */
export class DurablePodLock implements PodLock {
  constructor(
    private readonly ns: DONamespace,
    private readonly node: string,
    private readonly maxWaitMs: number,
  ) {}
  async run<T>(uid: string, fn: (fence: AbortSignal) => Promise<T>): Promise<T> {
    const stub = this.ns.get(this.ns.idFromName(`${this.node}/${uid}`));
    const leaseMs = Math.max(1000, this.maxWaitMs * 2);
    const sentAt = Date.now();
    const r = await stub.fetch(`https://lock/acquire?wait=${this.maxWaitMs}&lease=${leaseMs}`, { method: "POST" });
    if (r.status === 409) throw new PodBusyError(uid, this.maxWaitMs);
    if (!r.ok) throw new Error(`pod lock answered ${r.status}`);
    const { lease } = (await r.json()) as { lease: string };
    const fence = new LeaseFence(leaseMs);
    fence.renewed(sentAt);
    const beat = setInterval(() => {
      const at = Date.now();
      stub.fetch("https://lock/renew", { method: "POST", body: JSON.stringify({ lease }) }).then(
        (res) => {
          void res.body?.cancel();
          if (res.ok) fence.renewed(at);
          else if (res.status === 409) fence.lose("the pod's lease expired and may be held by another request");
        },
        () => undefined, // a failed renewal is retried on the next beat; the fence's deadline still holds
      );
    }, leaseMs / 4);
    try {
      return await fn(fence.signal);
    } finally {
      clearInterval(beat);
      fence.stop();
      await stub.fetch("https://lock/release", { method: "POST", body: JSON.stringify({ lease }) });
    }
  }
}
