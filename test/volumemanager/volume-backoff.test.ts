// A pod whose volume set-up keeps failing is retried with kubelet's exponential back-off (volumemanager:
// nestedpendingoperations, 500 ms doubling to 2 min), not at every relist: the node agent's loop on a clock of
// its own, in front of the in-process CRI runtime, with a volume writer that always fails.
import { beforeAll, describe, expect, it } from "vitest";
import type { FakeServer } from "../support/fake-cri.js";
import { uid } from "../support/pods.js";
import type { CriClient } from "../../src/cri/client.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import { startReconcileLoop } from "../../src/syncloop/sync-loop.js";
import type { VolumeFiles, VolumePayload } from "../../src/volumemanager/object-volumes.js";
import { bundleFromPayload } from "../../src/pod/bundle.js";
import { storedObjects } from "../../src/pod/objects.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

let fake: FakeServer;
let cri: CriClient;
const suite = useFakeCri();
beforeAll(() => ({ fake, cri } = suite));

/** A node filesystem that is full: every write fails (after it was tried). */
class FailingVolumeFiles implements VolumeFiles {
  readonly tries: number[] = [];
  constructor(private readonly now: () => number) {}
  async write(_p: VolumePayload): Promise<boolean> {
    this.tries.push(this.now());
    throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
  }
  async removeAll() {}
  async list() {
    return [];
  }
}

describe("volume set-up back-off", () => {
  it("the loop retries a failing volume write at 0.5 s, 1 s, 2 s ... apart, not at every relist; the failure says when the next try is", async () => {
    let t = 1_000_000;
    const now = () => t;
    const files = new FailingVolumeFiles(now);
    const rt = createPodRuntime(cri, { volumeFiles: files, now });
    const b = bundleFromPayload({
      pod: {
        metadata: { name: "vol-fail", namespace: "default", uid: uid("vol-fail") },
        spec: {
          volumes: [{ name: "cfg", configMap: { name: "cfg" } }],
          containers: [
            {
              name: "main",
              image: "localhost/busybox:1",
              command: ["sleep", "1d"],
              volumeMounts: [{ name: "cfg", mountPath: "/cfg" }],
            },
          ],
        },
      },
      configMaps: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg" }, data: { a: "1" } }],
    });
    const desired = new MemoryDesiredState();
    await desired.put({ pod: b.pod, objects: storedObjects(b.objects), audit: { iss: "test", iat: 1 }, storedAt: t });
    // Relists every second of the loop's clock; the error retry (kubelet's backOffPeriod) is 1 s here, so only the
    // volume back-off spaces the writes.
    const logs: Record<string, unknown>[] = [];
    const loop = startReconcileLoop({
      runtime: rt,
      cri,
      desired,
      manual: true,
      now,
      errorBackOffMs: 1000,
      log: (r) => logs.push(r),
    });
    try {
      for (let i = 0; i < 16; i++) {
        await loop.tick();
        t += 1000;
      }
    } finally {
      await loop.stop();
    }
    // 16 relists, 1 s apart: tried at 0 s, then once each 0.5, 1, 2, 4 s back-off had passed (the loop comes back
    // at its next relist after each): 0, 1, 2, 4, 8 s (the 16 s one would be at 16 s).
    expect(files.tries.map((x) => (x - 1_000_000) / 1000)).toEqual([0, 1, 2, 4, 8]);
    expect(
      fake.runtime.sandboxes.size === 0 ||
        [...fake.runtime.sandboxes.values()].every((s) => s.config.metadata?.uid !== b.pod.metadata.uid),
    ).toBe(true);
    // A sync in the back-off (the 8 s one after the 8 s try) reports it as kubelet does, without writing.
    t = 1_000_000 + 15_500;
    const r = await rt.sync(b.pod, undefined, b.objects);
    expect(r.steps).toEqual([
      expect.objectContaining({
        action: "MountVolumes",
        ok: false,
        error: "FailedMount",
        message: expect.stringMatching(
          /^MountVolume\.SetUp failed: Operation for "cfg" failed\. No retries permitted until .* \(durationBeforeRetry 8s\)\. Error: ENOSPC/,
        ),
      }),
    ]);
    expect(files.tries).toHaveLength(5);
    // A changed payload (a new ConfigMap) is a new operation: tried at once.
    const changed = bundleFromPayload({
      pod: b.pod,
      configMaps: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg" }, data: { a: "2" } }],
    });
    await rt.sync(changed.pod, undefined, changed.objects);
    expect(files.tries).toHaveLength(6);
  });
});
