// Durable Object PodSerializer (one per node/pod). Guarantees: one lease at a time, granted in FIFO order;
// a lease expires unless renewed, so a vanished holder cannot wedge the pod.
import { MemoryPodLock } from "../kuberuntime/pod-lock.js";

/** Durable Object: one per node/pod; a FIFO of requests, one lease at a time, leases expire unless renewed. */
export class PodSerializer {
  private readonly lock = new MemoryPodLock(Infinity); // callers bound their own wait (?wait=)
  private readonly leases = new Map<string, { release: () => void; renew: () => void }>();

  async fetch(req: Request): Promise<Response> {
    const url = new URL(req.url);
    if (url.pathname === "/release") {
      const { lease } = (await req.json()) as { lease: string };
      this.leases.get(lease)?.release();
      return Response.json({ ok: true });
    }
    if (url.pathname === "/renew") {
      const { lease } = (await req.json()) as { lease: string };
      const held = this.leases.get(lease);
      if (!held) return Response.json({ lost: true }, { status: 409 });
      held.renew();
      return Response.json({ ok: true });
    }
    const wait = Number(url.searchParams.get("wait") ?? 30_000);
    const leaseMs = Number(url.searchParams.get("lease") ?? 60_000);
    let granted!: (lease: string) => void;
    const grant = new Promise<string>((r) => (granted = r));
    // The lease is held inside the in-memory lock until released (or expired, if the caller vanished).
    void this.lock.run("pod", () => {
      const lease = crypto.randomUUID();
      return new Promise<void>((release) => {
        let timer = setTimeout(() => done(), leaseMs);
        const done = () => {
          clearTimeout(timer);
          this.leases.delete(lease);
          release();
        };
        const renew = () => {
          clearTimeout(timer);
          timer = setTimeout(() => done(), leaseMs);
        };
        this.leases.set(lease, { release: done, renew });
        granted(lease);
      });
    });
    let waitTimer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<undefined>((r) => (waitTimer = setTimeout(() => r(undefined), wait)));
    const lease = await Promise.race([grant, timeout]);
    clearTimeout(waitTimer);
    if (lease === undefined) {
      // Give the slot back as soon as it comes, since nobody will use it.
      void grant.then((l) => this.leases.get(l)?.release());
      return Response.json({ busy: true }, { status: 409 });
    }
    return Response.json({ lease });
  }
}
