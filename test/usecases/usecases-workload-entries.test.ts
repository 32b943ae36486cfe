// The store records of a request's workloads (src/usecases/workloads/entries.ts): a sync that sends a workload
// again alone keeps the ConfigMaps and Secrets stored with it (the CLI's scale and rollout edits re-sign it alone);
// one that sends objects replaces them; a whole set (keepObjects false) and a new uid keep nothing.
import { describe, expect, it } from "vitest";
import type { VerifiedToken } from "../../src/auth/verify.js";
import type { StoredWorkload } from "../../src/controllers/store.js";
import type { WorkloadItem } from "../../src/pod/workloads/intake.js";
import { workloadEntries } from "../../src/usecases/workloads/entries.js";

const token = { kid: "k", payload: { iss: "i", jti: "j", iat: 1 } } as unknown as VerifiedToken;
const deploy = (uid: string, replicas: number) =>
  ({
    kind: "Deployment",
    apiVersion: "apps/v1",
    metadata: { name: "web", namespace: "default", uid },
    spec: { replicas },
  }) as unknown as WorkloadItem["workload"];
const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg", namespace: "default" }, data: { a: "1" } };
const item = (uid: string, replicas: number, configMaps: unknown[] = []) =>
  ({ workload: deploy(uid, replicas), objects: { configMaps, secrets: [] }, at: "" }) as unknown as WorkloadItem;
const stored: StoredWorkload[] = [
  {
    workload: deploy("u1", 1),
    audit: { iss: "i", kid: "k", jti: "j0", iat: 0 },
    storedAt: 0,
    generation: 1,
    objects: { configMaps: [cm] },
  } as StoredWorkload,
];

describe("workloadEntries", () => {
  it("a sync sending the workload alone keeps its stored ConfigMaps; the generation moves", () => {
    const [e] = workloadEntries([item("u1", 3)], token, 5, stored, true);
    expect(e).toMatchObject({ objects: { configMaps: [cm] }, generation: 2, storedAt: 0 });
  });
  it("objects sent replace the stored ones; a whole set or a new uid keeps none", () => {
    const other = { ...cm, data: { a: "2" } };
    expect(workloadEntries([item("u1", 1, [other])], token, 5, stored, true)[0]!.objects).toEqual({
      configMaps: [other],
    });
    expect(workloadEntries([item("u1", 1)], token, 5, stored)[0]!.objects).toBeUndefined();
    expect(workloadEntries([item("u2", 1)], token, 5, stored, true)[0]!.objects).toBeUndefined();
  });
});
