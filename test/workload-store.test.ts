// The node's workloads on disk (src/state/workloads.ts): kept across a restart, Secrets sealed at rest, a record
// changed by hand held to the request's rules; and the Warning header as the API server writes it.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileWorkloadStore } from "../src/state/workloads.js";
import { importSealKey, newSealKeyBytes } from "../src/state/secret-seal.js";
import { Deployment } from "../src/pod/workloads/schema.js";
import { warningHeader } from "../src/http/warnings.js";

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
    const text = readFileSync(join(dir, "workloads.json"), "utf8");
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

    const j = JSON.parse(text);
    j.workloads[0].workload.spec.replicas = 5000;
    writeFileSync(join(dir, "workloads.json"), JSON.stringify(j));
    const skipped: string[] = [];
    expect(
      await new FileWorkloadStore(
        dir,
        () => key,
        (_f, why) => skipped.push(why),
      ).list(),
    ).toEqual([]);
    expect(skipped).toEqual([expect.stringContaining("spec.replicas")]);
  });
});

describe("Warning headers", () => {
  it('299, agent -, the text quoted with " and \\ escaped, one line', () => {
    expect(warningHeader('v1 Service "web" skipped')).toBe('299 - "v1 Service \\"web\\" skipped"');
    expect(warningHeader("a\nb\\c")).toBe('299 - "a b\\\\c"');
  });
});
