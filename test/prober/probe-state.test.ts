// Probe workers' state in files under the state dir (src/state/probe-state.ts): written atomically and read
// back by a new store, so a restarted podsync's prober goes on from the counts it had (a liveness probe two
// failures into a threshold of three restarts the container at the next failure, not three later).
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { CriClient } from "../../src/cri/client.js";
import { createProber, MemoryProbeStateStore, type PodProbeState } from "../../src/prober/prober.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { FileProbeStateStore } from "../../src/state/probe-state.js";
import { StateUnavailableError } from "../../src/pleg/state-unavailable.js";
import type { FakeServer } from "../support/fake-cri.js";
import { pod } from "../support/pods.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

const worker = (over: Partial<PodProbeState[string]> = {}): PodProbeState[string] => ({
  containerId: "c1",
  result: "Success",
  changedAt: 5,
  lastResult: "Failure",
  resultRun: 2,
  onHold: false,
  nextAt: 1234,
  ...over,
});

describe("FileProbeStateStore", () => {
  it("keeps each pod's state in its own 0600 file under a 0700 dir, read back by a new store", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "podsync-probes-")), "probes");
    const a = new FileProbeStateStore(dir, { flushMs: 10_000 });
    await a.open();
    a.set("pod-a", { "main/liveness": worker() });
    a.set("pod-b", { "main/readiness": worker({ result: "Failure" }) });
    await a.close();
    expect((statSync(dir).mode & 0o777).toString(8)).toBe("700");
    expect(readdirSync(dir).sort()).toEqual(["pod-a.json", "pod-b.json"]);
    expect((statSync(join(dir, "pod-a.json")).mode & 0o777).toString(8)).toBe("600");
    const b = new FileProbeStateStore(dir);
    await b.open();
    expect(b.get("pod-a")).toEqual({ "main/liveness": worker() });
    expect(b.get("pod-b")!["main/readiness"]!.result).toBe("Failure");
    b.delete("pod-a");
    await b.flush();
    expect(readdirSync(dir)).toEqual(["pod-b.json"]);
  });

  it("writes a pod only when what a restart reads changed, not for a ticker's next time", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-probes-"));
    const s = new FileProbeStateStore(dir, { flushMs: 10_000 });
    await s.open();
    const state = { "main/readiness": worker() };
    s.set("pod-a", state);
    await s.flush();
    const file = join(dir, "pod-a.json");
    const written = readFileSync(file, "utf8");
    // The prober mutates its state in place: a steady probe moves only nextAt.
    state["main/readiness"]!.nextAt += 10_000;
    s.set("pod-a", state);
    await s.flush();
    expect(readFileSync(file, "utf8")).toBe(written);
    state["main/readiness"]!.lastResult = "Success";
    s.set("pod-a", state);
    await s.flush();
    expect(JSON.parse(readFileSync(file, "utf8"))["main/readiness"]).toEqual(
      worker({ lastResult: "Success", nextAt: 11_234 }),
    );
  });

  it("writes behind: a change reaches the disk within flushMs, without a flush call", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-probes-"));
    const s = new FileProbeStateStore(dir, { flushMs: 20 });
    await s.open();
    s.set("pod-a", { "main/liveness": worker() });
    expect(readdirSync(dir)).toEqual([]);
    await expect.poll(() => readdirSync(dir), { timeout: 2000 }).toEqual(["pod-a.json"]);
    expect(JSON.parse(readFileSync(join(dir, "pod-a.json"), "utf8"))).toEqual({ "main/liveness": worker() });
  });

  it("a torn or foreign file is ignored (that pod starts over); a crash's temporary file is removed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-probes-"));
    writeFileSync(join(dir, "torn.json"), '{"main/liveness": {"containerId": "c1", "nextAt"');
    writeFileSync(join(dir, "odd.json"), JSON.stringify({ "main/liveness": { hello: 1 } }));
    writeFileSync(join(dir, "ok.json.123.tmp"), "{}");
    const s = new FileProbeStateStore(dir);
    await s.open();
    expect(s.get("torn")).toBeUndefined();
    expect(s.get("odd")).toBeUndefined();
    expect(readdirSync(dir).sort()).toEqual(["odd.json", "torn.json"]);
  });

  it("a directory that cannot be made is StateUnavailableError naming the cause", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "podsync-probes-")), "not-a-dir");
    writeFileSync(file, "");
    const s = new FileProbeStateStore(join(file, "probes"));
    const e = await s.open().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(StateUnavailableError);
    expect((e as StateUnavailableError).code).toBe("ENOTDIR");
  });
});

describe("probe thresholds survive a restart of podsync", () => {
  let fake: FakeServer;
  let cri: CriClient;
  const suite = useFakeCri();
  beforeAll(async () => {
    ({ fake, cri } = suite);
    // Every exec probe fails.
    fake.runtime.runtime["ExecSync"] = () => ({
      exitCode: 1,
      stdout: new TextEncoder().encode("unhealthy"),
      stderr: new Uint8Array(),
    });
  });

  it("two failures before the restart and one after reach failureThreshold 3; a fresh store would need three", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-probes-"));
    const p = pod({
      containers: [
        {
          name: "main",
          image: "localhost/busybox:1",
          command: ["sleep", "3600"],
          livenessProbe: { exec: { command: ["check"] }, periodSeconds: 1, failureThreshold: 3 },
        },
      ],
    });
    const uid = p.metadata.uid;
    const rt = createPodRuntime(cri);
    const status = (await rt.sync(p)).after;
    let t = Date.now();

    const before = new FileProbeStateStore(dir);
    await before.open();
    const first = createProber({ cri, store: before });
    first.upsert(p);
    first.observe(uid, status);
    await first.tick((t += 1000));
    await first.tick((t += 1000));
    expect(first.needsSync(uid)).toBe(false);
    await before.close(); // podsync stops

    const after = new FileProbeStateStore(dir);
    await after.open();
    const second = createProber({ cri, store: after });
    second.upsert(p);
    second.observe(uid, status);
    await second.tick((t += 1000));
    expect(second.needsSync(uid)).toBe(true);
    expect([...second.results(uid).liveness!.values()]).toEqual(["Failure"]);

    // The same restart without persisted state starts the count over.
    const fresh = createProber({ cri, store: new MemoryProbeStateStore() });
    fresh.upsert(p);
    fresh.observe(uid, status);
    await fresh.tick((t += 1000));
    expect(fresh.needsSync(uid)).toBe(false);
    await rt.delete(uid, 0);
  });
});
