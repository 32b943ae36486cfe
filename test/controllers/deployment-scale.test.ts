// Proportional scaling of a Deployment's ReplicaSets (src/controllers/deployment/scale.ts), with upstream's rows:
// pkg/controller/deployment/sync_test.go TestScale and util/deployment_util_test.go TestGetReplicaSetFraction
// (the rows that need a fake client's failed update are left out; the others as they are).
import { describe, expect, it } from "vitest";
import { Deployment } from "../../src/pod/workloads/schema.js";
import {
  DESIRED_REPLICAS_ANNOTATION,
  getReplicaSetFraction,
  MAX_REPLICAS_ANNOTATION,
  maxSurge,
  proportionalSizes,
  type ScaledReplicaSet,
} from "../../src/controllers/deployment/scale.js";
import { syncDeployment, type ReplicaSetView } from "../../src/controllers/deployment/sync.js";
import { ReplicaSet } from "../../src/pod/workloads/schema.js";

/** newDeployment(name, replicas, nil, maxSurge, maxUnavailable, selector): RollingUpdate, maxSurge and maxUnavailable 0 unless given. */
const newDeployment = (
  replicas: number,
  maxSurge = 0,
  maxUnavailable = 0,
  labels: Record<string, string> = { foo: "bar" },
) =>
  Deployment.parse({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "foo", uid: "d1" },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge, maxUnavailable } },
      template: { metadata: { labels }, spec: { containers: [{ name: "c", image: "foo/bar" }] } },
    },
  });
const newTimestamp = Date.UTC(2016, 4, 20, 2);
const oldTimestamp = Date.UTC(2016, 4, 20, 1);
const olderTimestamp = Date.UTC(2016, 4, 20, 0);
/** rs(name, replicas, nil, timestamp): all its replicas available. */
const rs = (name: string, replicas: number, createdAt: number, availableReplicas = replicas): ScaledReplicaSet => ({
  name,
  replicas,
  createdAt,
  availableReplicas,
});

describe("TestScale (sync.go scale)", () => {
  interface Row {
    name: string;
    deployment: Deployment;
    oldDeployment: Deployment;
    newRS: ScaledReplicaSet | undefined;
    oldRSs: ScaledReplicaSet[];
    expectedNew: number | undefined;
    expectedOld: number[];
    desiredReplicasAnnotations?: Record<string, number>;
  }
  const rows: Row[] = [
    {
      name: "normal scaling event: 10 -> 12",
      deployment: newDeployment(12),
      oldDeployment: newDeployment(10),
      newRS: rs("foo-v1", 10, newTimestamp),
      oldRSs: [],
      expectedNew: 12,
      expectedOld: [],
    },
    {
      name: "normal scaling event: 10 -> 5",
      deployment: newDeployment(5),
      oldDeployment: newDeployment(10),
      newRS: rs("foo-v1", 10, newTimestamp),
      oldRSs: [],
      expectedNew: 5,
      expectedOld: [],
    },
    {
      name: "proportional scaling: 5 -> 10",
      deployment: newDeployment(10),
      oldDeployment: newDeployment(5),
      newRS: rs("foo-v2", 2, newTimestamp),
      oldRSs: [rs("foo-v1", 3, oldTimestamp)],
      expectedNew: 4,
      expectedOld: [6],
    },
    {
      name: "proportional scaling: 5 -> 3",
      deployment: newDeployment(3),
      oldDeployment: newDeployment(5),
      newRS: rs("foo-v2", 2, newTimestamp),
      oldRSs: [rs("foo-v1", 3, oldTimestamp)],
      expectedNew: 1,
      expectedOld: [2],
    },
    {
      name: "proportional scaling: 9 -> 4",
      deployment: newDeployment(4),
      oldDeployment: newDeployment(9),
      newRS: rs("foo-v2", 8, newTimestamp),
      oldRSs: [rs("foo-v1", 1, oldTimestamp)],
      expectedNew: 4,
      expectedOld: [0],
    },
    {
      name: "proportional scaling: 7 -> 10",
      deployment: newDeployment(10),
      oldDeployment: newDeployment(7),
      newRS: rs("foo-v3", 2, newTimestamp),
      oldRSs: [rs("foo-v2", 3, oldTimestamp), rs("foo-v1", 2, olderTimestamp)],
      expectedNew: 3,
      expectedOld: [4, 3],
    },
    {
      name: "proportional scaling: 13 -> 8",
      deployment: newDeployment(8),
      oldDeployment: newDeployment(13),
      newRS: rs("foo-v3", 2, newTimestamp),
      oldRSs: [rs("foo-v2", 8, oldTimestamp), rs("foo-v1", 3, olderTimestamp)],
      expectedNew: 1,
      expectedOld: [5, 2],
    },
    // Scales up the new replica set.
    {
      name: "leftover distribution: 3 -> 4",
      deployment: newDeployment(4),
      oldDeployment: newDeployment(3),
      newRS: rs("foo-v3", 1, newTimestamp),
      oldRSs: [rs("foo-v2", 1, oldTimestamp), rs("foo-v1", 1, olderTimestamp)],
      expectedNew: 2,
      expectedOld: [1, 1],
    },
    // Scales down the older replica set.
    {
      name: "leftover distribution: 3 -> 2",
      deployment: newDeployment(2),
      oldDeployment: newDeployment(3),
      newRS: rs("foo-v3", 1, newTimestamp),
      oldRSs: [rs("foo-v2", 1, oldTimestamp), rs("foo-v1", 1, olderTimestamp)],
      expectedNew: 1,
      expectedOld: [1, 0],
    },
    // Scales up the latest replica set first.
    {
      name: "proportional scaling (no new rs): 4 -> 5",
      deployment: newDeployment(5),
      oldDeployment: newDeployment(4),
      newRS: undefined,
      oldRSs: [rs("foo-v2", 2, oldTimestamp), rs("foo-v1", 2, olderTimestamp)],
      expectedNew: undefined,
      expectedOld: [3, 2],
    },
    // Scales down to zero
    {
      name: "proportional scaling: 6 -> 0",
      deployment: newDeployment(0),
      oldDeployment: newDeployment(6),
      newRS: rs("foo-v3", 3, newTimestamp),
      oldRSs: [rs("foo-v2", 2, oldTimestamp), rs("foo-v1", 1, olderTimestamp)],
      expectedNew: 0,
      expectedOld: [0, 0],
    },
    // Scales up from zero
    {
      name: "proportional scaling: 0 -> 6",
      deployment: newDeployment(6),
      oldDeployment: newDeployment(6),
      newRS: rs("foo-v3", 0, newTimestamp),
      oldRSs: [rs("foo-v2", 0, oldTimestamp), rs("foo-v1", 0, olderTimestamp)],
      expectedNew: 6,
      expectedOld: [0, 0],
    },
    // Upstream's "failed rs update" row without the failed update: foo-v2 was sized for 3, the others for 5.
    {
      name: "failed rs update",
      deployment: newDeployment(5),
      oldDeployment: newDeployment(5),
      newRS: rs("foo-v3", 2, newTimestamp),
      oldRSs: [rs("foo-v2", 1, oldTimestamp), rs("foo-v1", 1, olderTimestamp)],
      expectedNew: 2,
      expectedOld: [2, 1],
      desiredReplicasAnnotations: { "foo-v2": 3 },
    },
    {
      name: "deployment with surge pods",
      deployment: newDeployment(20, 2),
      oldDeployment: newDeployment(10, 2),
      newRS: rs("foo-v2", 6, newTimestamp),
      oldRSs: [rs("foo-v1", 6, oldTimestamp)],
      expectedNew: 11,
      expectedOld: [11],
    },
    {
      name: "change both surge and size",
      deployment: newDeployment(50, 6),
      oldDeployment: newDeployment(10, 3),
      newRS: rs("foo-v2", 5, newTimestamp),
      oldRSs: [rs("foo-v1", 8, oldTimestamp)],
      expectedNew: 22,
      expectedOld: [34],
    },
    {
      name: "change both size and template",
      deployment: newDeployment(14, 0, 0, { foo: "bar", another: "label" }),
      oldDeployment: newDeployment(10),
      newRS: undefined,
      oldRSs: [rs("foo-v2", 7, newTimestamp), rs("foo-v1", 3, oldTimestamp)],
      expectedNew: undefined,
      expectedOld: [10, 4],
    },
    {
      name: "saturated but broken new replica set does not affect old pods",
      deployment: newDeployment(2, 1, 1),
      oldDeployment: newDeployment(2, 1, 1),
      newRS: rs("foo-v2", 2, newTimestamp, 0),
      oldRSs: [rs("foo-v1", 1, oldTimestamp)],
      expectedNew: 2,
      expectedOld: [1],
    },
  ];
  for (const t of rows)
    it(t.name, () => {
      // SetReplicasAnnotations(rs, desired, desired + MaxSurge(oldDeployment)) on each, as the test does.
      const annotate = (r: ScaledReplicaSet) => {
        const desired = t.desiredReplicasAnnotations?.[r.name] ?? t.oldDeployment.spec.replicas;
        return {
          ...r,
          annotations: {
            [DESIRED_REPLICAS_ANNOTATION]: String(desired),
            [MAX_REPLICAS_ANNOTATION]: String(desired + maxSurge(t.oldDeployment)),
          },
        };
      };
      const newRS = t.newRS && annotate(t.newRS);
      const olds = t.oldRSs.map(annotate);
      const sizes = proportionalSizes(t.deployment, newRS, olds, 0);
      const size = (r: ScaledReplicaSet) => sizes.get(r.name) ?? r.replicas;
      if (t.expectedNew !== undefined && newRS) expect(size(newRS)).toBe(t.expectedNew);
      expect(olds.map(size)).toEqual(t.expectedOld);
    });
});

describe("TestGetReplicaSetFraction (deployment_util.go getReplicaSetFraction)", () => {
  const rows: {
    name: string;
    deploymentReplicas: number;
    deploymentStatusReplicas?: number;
    deploymentMaxSurge?: number;
    rsReplicas: number;
    rsAnnotations?: Record<string, string>;
    expectedFraction: number;
  }[] = [
    { name: "empty deployment always scales to 0", deploymentReplicas: 0, rsReplicas: 10, expectedFraction: -10 },
    {
      name: "unsynced deployment does not scale when max-replicas annotation is missing (removed by a 3rd party)",
      deploymentReplicas: 10,
      rsReplicas: 5,
      expectedFraction: 0,
    },
    {
      name: "unsynced deployment does not scale when max-replicas annotation is incorrectly set to 0 (by a 3rd party)",
      deploymentReplicas: 10,
      rsReplicas: 5,
      rsAnnotations: { [MAX_REPLICAS_ANNOTATION]: "0" },
      expectedFraction: 0,
    },
    {
      name: "scale up by 1/5 should increase RS replicas by 1/5 when max-replicas annotation is missing (removed by a 3rd party)",
      deploymentReplicas: 120,
      deploymentStatusReplicas: 100,
      rsReplicas: 50,
      expectedFraction: 10,
    },
    {
      name: "scale up by 1/5 should increase RS replicas by 1/5 when max-replicas annotation is incorrectly set to 0 (by a 3rd party)",
      deploymentReplicas: 120,
      deploymentStatusReplicas: 100,
      rsReplicas: 50,
      rsAnnotations: { [MAX_REPLICAS_ANNOTATION]: "0" },
      expectedFraction: 10,
    },
    {
      name: "scale up by 1/5 should increase RS replicas by 1/5",
      deploymentReplicas: 120,
      rsReplicas: 50,
      rsAnnotations: { [MAX_REPLICAS_ANNOTATION]: "100" },
      expectedFraction: 10,
    },
    // Not the whole 1/5 (10): maxSurge pods are taken into account.
    {
      name: "scale up with maxSurge by 1/5 should increase RS replicas approximately by 1/5",
      deploymentReplicas: 120,
      deploymentMaxSurge: 10,
      rsReplicas: 50,
      rsAnnotations: { [MAX_REPLICAS_ANNOTATION]: "110" },
      expectedFraction: 9,
    },
    {
      name: "scale down by 1/6 should decrease RS replicas by 1/6",
      deploymentReplicas: 10,
      rsReplicas: 6,
      rsAnnotations: { [MAX_REPLICAS_ANNOTATION]: "12" },
      expectedFraction: -1,
    },
    {
      name: "scale down with maxSurge by 1/6 should decrease RS replicas approximately by 1/6",
      deploymentReplicas: 100,
      deploymentMaxSurge: 10,
      rsReplicas: 50,
      rsAnnotations: { [MAX_REPLICAS_ANNOTATION]: "130" },
      expectedFraction: -8,
    },
  ];
  for (const t of rows)
    it(t.name, () => {
      const d = newDeployment(t.deploymentReplicas, t.deploymentMaxSurge ?? 0, 1);
      expect(
        getReplicaSetFraction(
          { name: "foo-rs", replicas: t.rsReplicas, createdAt: 0, annotations: t.rsAnnotations },
          d,
          t.deploymentStatusReplicas ?? 0,
        ),
      ).toBe(t.expectedFraction);
    });
});

describe("the Deployment controller on a scaling event mid-rollout", () => {
  it("replicas 4 -> 8 while an update is half done: both ReplicaSets grow in proportion, no rollout step in that pass; the rollout then goes on", () => {
    const ctx = { now: Date.UTC(2026, 0, 1), nodeName: "n", suffix: () => "abcde" };
    const v1 = newDeployment(4, 1, 0);
    // Roll v1 -> v2 partway: the old ReplicaSet at 2, the new one at 3, as the rolling steps left them (sized for 4).
    const first = syncDeployment(v1, [], undefined, ctx).putChildren![0] as ReplicaSet;
    const v2 = newDeployment(4, 1, 0, { foo: "bar", v: "2" });
    const second = syncDeployment(v2, [{ rs: first, pods: [], createdAt: 1 }], undefined, ctx).putChildren!.find(
      (r) => r.metadata.name !== first.metadata.name,
    ) as ReplicaSet;
    const view = (r: ReplicaSet, n: number, createdAt: number): ReplicaSetView => ({
      rs: ReplicaSet.parse({ ...r, spec: { ...r.spec, replicas: n } }),
      pods: [],
      createdAt,
    });
    const views = [view(first, 2, 1), view(second, 3, 2)];
    expect(second.metadata.annotations).toMatchObject({
      "deployment.kubernetes.io/desired-replicas": "4",
      [MAX_REPLICAS_ANNOTATION]: "5",
    });
    const scaled = syncDeployment(newDeployment(8, 1, 0, { foo: "bar", v: "2" }), views, undefined, ctx);
    // allowed 8 + 1 = 9, 5 now: +4 shared by size (newer first on a tie): new 3 -> 3*9/5 = 5.4 -> 5, old 2 -> 2+2 = 4.
    const sizes = Object.fromEntries(
      scaled.putChildren!.map((r) => [r.metadata.name, (r as ReplicaSet).spec.replicas]),
    );
    expect(sizes).toEqual({ [second.metadata.name]: 5, [first.metadata.name]: 4 });
    expect((scaled.putChildren![0] as ReplicaSet).metadata.annotations).toMatchObject({
      "deployment.kubernetes.io/desired-replicas": "8",
      [MAX_REPLICAS_ANNOTATION]: "9",
    });
  });
});
