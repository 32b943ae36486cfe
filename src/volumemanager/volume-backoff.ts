// kubelet's exponential back-off for volume operations (pkg/volume/util/nestedpendingoperations, with
// pkg/util/goroutinemap/exponentialbackoff): after a volume's set-up fails, the same operation is not started
// again before 500 ms, then 1 s, 2 s, ... up to 2 min; a success forgets it. podsync writes a pod's file volumes
// (configMap, secret, downwardAPI, projected) at its syncs: a volume whose write keeps failing is retried on this
// schedule, not at every sync. Keyed by the volume's directory; a changed payload (a new ConfigMap, a new spec)
// is a new operation and is tried at once.
import type { VolumePayload } from "./object-volumes.js";

const INITIAL_MS = 500;
const MAX_MS = 2 * 60_000;

interface Failure {
  fingerprint: number;
  error: string;
  at: number;
  delayMs: number;
}

export class VolumeBackOff {
  private readonly failed = new Map<string, Failure>();

  /** Why the write of `p` may not be tried at `now` (kubelet's "No retries permitted until ..."), or undefined. */
  held(p: VolumePayload, now: number): string | undefined {
    const f = this.failed.get(p.dir);
    if (!f || now >= f.at + f.delayMs) return undefined;
    if (f.fingerprint !== fingerprint(p)) {
      this.failed.delete(p.dir);
      return undefined;
    }
    const name = p.dir.slice(p.dir.lastIndexOf("/") + 1);
    return `Operation for "${name}" failed. No retries permitted until ${new Date(f.at + f.delayMs).toISOString()} (durationBeforeRetry ${f.delayMs / 1000}s). Error: ${f.error}`;
  }

  /** The write of `p` failed at `now`: the next try waits twice as long as the last (500 ms first, 2 min most). */
  fail(p: VolumePayload, error: string, now: number): void {
    const prev = this.failed.get(p.dir);
    const fp = fingerprint(p);
    const delayMs = prev && prev.fingerprint === fp ? Math.min(prev.delayMs * 2, MAX_MS) : INITIAL_MS;
    this.failed.set(p.dir, { fingerprint: fp, error, at: now, delayMs });
  }

  succeed(p: VolumePayload): void {
    this.failed.delete(p.dir);
  }

  /** Forget a pod's volumes (its directory prefix), when the pod goes. */
  forget(prefix: string): void {
    for (const k of this.failed.keys()) if (k.startsWith(prefix)) this.failed.delete(k);
  }
}

/** FNV-1a over the payload's paths, modes and bytes: what makes a retry a new operation. */
function fingerprint(p: VolumePayload): number {
  let h = 0x811c9dc5;
  const mix = (b: number) => {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  };
  const text = (s: string) => {
    for (let i = 0; i < s.length; i++) mix(s.charCodeAt(i) & 0xff);
  };
  text(`${p.tmpfs}|${p.fsGroup ?? ""}|`);
  for (const [path, f] of [...p.files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    text(`${path}\u0000${f.mode}\u0000`);
    for (const b of f.data) mix(b);
  }
  return h;
}
