// The node's workloads on disk (src/state/workloads.ts): kept across a restart, Secrets sealed at rest, a record
// changed by hand held to the request's rules; and the Warning header as the API server writes it.
import { appendFileSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileWorkloadStore } from "../../src/state/workloads.js";
import { importSealKey, newSealKeyBytes } from "../../src/state/secret-seal.js";
import { Deployment } from "../../src/pod/workloads/schema.js";
import { warningHeader } from "../../src/http/warnings.js";

const d = Deployment.parse({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web", uid: "d1" },
  spec: {
    selector: { matchLabels: { app: "web" } },
    template: {
      metadata: { labels: { app: "web" } },
      spec: { containers: [{ name: "c", image: "localhost/busybox:1" }] },
    },
  },
});
const secret = {
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "creds" },
  data: { password: "c2VjcmV0LXZhbHVl" },
};

describe("FileWorkloadStore", () => {
  it("keeps workloads and their status across a restart; Secrets sealed in the file; a bad record skipped and reported", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-wl-store-"));
    const key = importSealKey(newSealKeyBytes());
    const a = new FileWorkloadStore(dir, () => key);
    await a.put({
      workload: d,
      audit: { iss: "t", iat: 1 },
      storedAt: 5,
      generation: 1,
      objects: { secrets: [secret] },
    });
    await a.setStatus("Deployment/default/web", "d1", { replicas: 1 });
    const text = readFileSync(join(dir, "workloads.log"), "utf8");
    expect(text).not.toContain("c2VjcmV0LXZhbHVl");
    expect(text).toContain("SealedSecret");
    const b = new FileWorkloadStore(dir, () => key);
    const [e] = await b.list();
    expect(e).toMatchObject({
      workload: { metadata: { name: "web", uid: "d1" } },
      status: { replicas: 1 },
      storedAt: 5,
      objects: { secrets: [secret] },
    });
  });

  it("migrates workloads.json once (a record changed by hand held to the request's rules), then keeps the log", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-wl-store-"));
    const key = importSealKey(newSealKeyBytes());
    const good = { workload: d, audit: { iss: "t", iat: 1 }, storedAt: 5, status: { replicas: 2 } };
    const bad = {
      ...good,
      workload: { ...d, metadata: { name: "big", uid: "d2" }, spec: { ...d.spec, replicas: 5000 } },
    };
    writeFileSync(join(dir, "workloads.json"), JSON.stringify({ workloads: [good, bad] }));
    const skipped: string[] = [];
    const a = new FileWorkloadStore(
      dir,
      () => key,
      (_f, why) => skipped.push(why),
    );
    expect((await a.list()).map((w) => [w.workload.metadata.name, w.status])).toEqual([["web", { replicas: 2 }]]);
    expect(skipped).toEqual([expect.stringContaining("spec.replicas")]);
    expect(existsSync(join(dir, "workloads.json"))).toBe(false);
    expect(readFileSync(join(dir, "workloads.log"), "utf8").split("\n").filter(Boolean)).toHaveLength(1);
    await a.close();
    expect((await new FileWorkloadStore(dir, () => key).list()).map((w) => w.workload.metadata.name)).toEqual(["web"]);
  });

  it("a change writes about its own size among 1,000 workloads; a status write only the status; Secrets sealed once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-wl-store-"));
    const key = importSealKey(newSealKeyBytes());
    const s = new FileWorkloadStore(dir, () => key);
    const many = Array.from({ length: 1000 }, (_, i) => ({
      workload: { ...d, metadata: { ...d.metadata, name: `web-${i}`, uid: `u-${i}` } },
      audit: { iss: "t", iat: 1 },
      storedAt: i,
      objects: { secrets: [secret] },
    }));
    await s.putAll(many);
    const one = { ...many[500]!, storedAt: 9999 };
    const size = JSON.stringify(one).length;
    let before = s.bytesWritten;
    await s.put(one);
    expect(s.bytesWritten - before).toBeLessThanOrEqual(2 * size);
    before = s.bytesWritten;
    await s.setStatus("Deployment/default/web-7", "u-7", { replicas: 3, readyReplicas: 3 });
    expect(s.bytesWritten - before).toBeLessThan(100);
    // The same Secrets put again are not sealed again: the stored sealed form is written as it was.
    const lines = readFileSync(join(dir, "workloads.log"), "utf8").split("\n").filter(Boolean);
    const sealedOf = (l: string) => JSON.stringify((JSON.parse(l) as { p: { objects: unknown }[] }).p.at(-1)!.objects);
    const first = (
      JSON.parse(lines[0]!) as { p: { workload: { metadata: { name: string } }; objects: unknown }[] }
    ).p.find((r) => r.workload.metadata.name === "web-500")!;
    expect(sealedOf(lines.at(-2)!)).toBe(JSON.stringify(first.objects));
    // Changed Secrets are sealed anew.
    await s.put({ ...one, objects: { secrets: [{ ...secret, data: { password: "b3RoZXI=" } }] } });
    const last = readFileSync(join(dir, "workloads.log"), "utf8").split("\n").filter(Boolean).at(-1)!;
    expect(sealedOf(last)).not.toBe(JSON.stringify(first.objects));
    // Back from the log, status and all.
    const back = await new FileWorkloadStore(dir, () => key).list();
    expect(back).toHaveLength(1000);
    expect(back.find((w) => w.workload.metadata.name === "web-7")?.status).toEqual({ replicas: 3, readyReplicas: 3 });
    expect(back.find((w) => w.workload.metadata.name === "web-500")?.objects?.secrets).toEqual([
      { ...secret, data: { password: "b3RoZXI=" } },
    ]);
  });

  it("compacts the log once it has grown past twice the live records; a torn last line is dropped", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-wl-store-"));
    const key = importSealKey(newSealKeyBytes());
    const s = new FileWorkloadStore(dir, () => key);
    await s.put({ workload: d, audit: { iss: "t", iat: 1 }, storedAt: 1 });
    for (let i = 0; i < 3000; i++)
      await s.setStatus("Deployment/default/web", "d1", { replicas: i, pad: "x".repeat(100) });
    expect(statSync(join(dir, "workloads.log")).size).toBeLessThan(2 * 1024 + 2 * 256 * 1024);
    appendFileSync(join(dir, "workloads.log"), '{"d":["Deployment/def');
    const back = await new FileWorkloadStore(dir, () => key).list();
    expect(back.map((w) => w.status?.["replicas"])).toEqual([2999]);
  });
});

describe("Warning headers", () => {
  it('299, agent -, the text quoted with " and \\ escaped, one line', () => {
    expect(warningHeader('v1 Service "web" skipped')).toBe('299 - "v1 Service \\"web\\" skipped"');
    expect(warningHeader("a\nb\\c")).toBe('299 - "a b\\\\c"');
  });
});
