// Pod fixtures, validated through the real schema so tests see exactly what the engine sees.
import { Pod, type PodInput } from "../../src/pod/schema.js";
import { InvalidPodError } from "../../src/pod/validate.js";
import type { CriClient } from "../../src/cri/client.js";
import { createPodRuntime, type PodRuntimeOptions } from "../../src/kubelet/pod-runtime.js";

let n = 0;
export function uid(prefix = "pod"): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${(n++).toString(36)}`;
}

export function pod(spec: Partial<PodInput["spec"]> = {}, meta: Partial<PodInput["metadata"]> = {}): Pod {
  const id = meta.uid ?? uid();
  return Pod.parse({
    metadata: {
      name: meta.name ?? `p-${id.slice(-12).replace(/[^a-z0-9]/g, "")}`,
      namespace: "default",
      ...meta,
      uid: id,
    },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "3600"] }],
      ...spec,
    },
  });
}

/** One whole sync through the engine's front door, with a fresh runtime (no state carried between calls
 * but what the options bring, as for a restarted podsync). */
export const syncOnce = (cri: CriClient, pod: Pod, o: PodRuntimeOptions = {}) => createPodRuntime(cri, o).sync(pod);

/** The field errors an InvalidPodError carries; a call that does not throw one fails the test. */
export function errorsOf(fn: () => unknown): { path: string; message: string }[] {
  try {
    fn();
  } catch (e) {
    if (e instanceof InvalidPodError) return e.errors;
    throw e;
  }
  throw new Error("expected InvalidPodError");
}

/** A test's cleanup: its pods torn down at once, not one after another (each StopContainer of a `sleep` that
 * ignores SIGTERM waits out kubelet's 2 s minimum grace), failures ignored. */
export async function deleteAll(
  rt: { delete(uid: string, grace?: number): Promise<unknown> },
  uids: Iterable<string>,
  grace = 0,
): Promise<void> {
  await Promise.all([...new Set(uids)].map((u) => rt.delete(u, grace).catch(() => undefined)));
}
