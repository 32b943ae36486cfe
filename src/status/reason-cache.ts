// kubelet's ReasonCache (pkg/kubelet/reason_cache.go): why the last start of each container failed, kept
// from one sync to the next so the status can say "ErrImagePull", "CreateContainerConfigError", ... while
// the container waits. Updated from a sync's StartContainer/InitContainer steps: a failure records the
// reason and message, a success forgets them. In memory and bounded like kubelet's LRU; losing it loses
// only that detail (a crash loop is derived from the runtime without it).
import type { StartFailure } from "./api-status.js";
import type { SyncStep } from "../container/types.js";

export interface ReasonCache {
  get(uid: string): ReadonlyMap<string, StartFailure> | undefined;
  update(uid: string, steps: readonly SyncStep[]): void;
  delete(uid: string): void;
}

export class MemoryReasonCache implements ReasonCache {
  private readonly pods = new Map<string, Map<string, StartFailure>>();
  constructor(private readonly maxPods = 1000) {}
  get(uid: string) {
    return this.pods.get(uid);
  }
  update(uid: string, steps: readonly SyncStep[]) {
    let m = this.pods.get(uid);
    for (const s of steps) {
      if (s.action !== "StartContainer" && s.action !== "InitContainer") continue;
      if (s.ok) m?.delete(s.target);
      else {
        if (!m) {
          if (this.pods.size >= this.maxPods) this.pods.delete(this.pods.keys().next().value!);
          this.pods.set(uid, (m = new Map()));
        }
        m.set(s.target, { reason: s.error ?? "", message: s.message ?? "" });
      }
    }
    if (m && m.size === 0) this.pods.delete(uid);
  }
  delete(uid: string) {
    this.pods.delete(uid);
  }
}
