// The pure parts of scale/rollout/describe and of `get pvc`'s StatefulSet claims (no node): kubectl's messages
// and decisions, ported from rollout_status.go, rollback.go and history.go, and Go's tabwriter.
import { describe, expect, it } from "vitest";
import { describeWorkload, tabwrite } from "../../src/cli/print/describe.js";
import { editable } from "../../src/cli/workloads/edit.js";
import { historyTable, revisions, rollback, rolloutStatus } from "../../src/cli/workloads/rollout.js";
import { statefulSetClaims } from "../../src/kubeapi/kinds/statefulset-claims.js";

const dep = (status: Record<string, unknown>, generation = 2, spec: Record<string, unknown> = {}) => ({
  kind: "Deployment",
  metadata: { name: "web", generation },
  spec: { replicas: 3, ...spec },
  status,
});

describe("rollout status (rollout_status.go)", () => {
  it("says each Deployment stage in kubectl's words, in kubectl's order", () => {
    expect(rolloutStatus(dep({ observedGeneration: 1 }))).toEqual({
      message: "Waiting for deployment spec update to be observed...",
      done: false,
    });
    expect(rolloutStatus(dep({ observedGeneration: 2, updatedReplicas: 1 }))).toMatchObject({
      message: 'Waiting for deployment "web" rollout to finish: 1 out of 3 new replicas have been updated...',
    });
    expect(rolloutStatus(dep({ observedGeneration: 2, updatedReplicas: 3, replicas: 4 }))).toMatchObject({
      message: 'Waiting for deployment "web" rollout to finish: 1 old replicas are pending termination...',
    });
    expect(
      rolloutStatus(dep({ observedGeneration: 2, updatedReplicas: 3, replicas: 3, availableReplicas: 1 })),
    ).toMatchObject({
      message: 'Waiting for deployment "web" rollout to finish: 1 of 3 updated replicas are available...',
    });
    expect(
      rolloutStatus(dep({ observedGeneration: 2, updatedReplicas: 3, replicas: 3, availableReplicas: 3 })),
    ).toEqual({ message: 'deployment "web" successfully rolled out', done: true });
    expect(
      rolloutStatus(
        dep({ observedGeneration: 2, conditions: [{ type: "Progressing", reason: "ProgressDeadlineExceeded" }] }),
      ),
    ).toEqual({ error: 'deployment "web" exceeded its progress deadline' });
  });

  it("StatefulSet and DaemonSet, and the kinds with no status viewer", () => {
    const sts = (status: Record<string, unknown>, rollingUpdate?: unknown) => ({
      kind: "StatefulSet",
      metadata: { name: "db", generation: 1 },
      spec: { replicas: 2, updateStrategy: { type: "RollingUpdate", ...(rollingUpdate ? { rollingUpdate } : {}) } },
      status,
    });
    expect(rolloutStatus(sts({}))).toMatchObject({ message: "Waiting for statefulset spec update to be observed..." });
    expect(rolloutStatus(sts({ observedGeneration: 1, readyReplicas: 1 }))).toMatchObject({
      message: "Waiting for 1 pods to be ready...",
    });
    expect(
      rolloutStatus(
        sts({ observedGeneration: 1, readyReplicas: 2, currentRevision: "a", updateRevision: "a", currentReplicas: 2 }),
      ),
    ).toEqual({ message: "statefulset rolling update complete 2 pods at revision a...", done: true });
    expect(
      rolloutStatus(sts({ observedGeneration: 1, readyReplicas: 2, updatedReplicas: 1 }, { partition: 0 })),
    ).toMatchObject({
      message: "Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated...",
      done: false,
    });
    const ds = {
      kind: "DaemonSet",
      metadata: { name: "agent", generation: 1 },
      spec: { updateStrategy: { type: "RollingUpdate" } },
      status: { observedGeneration: 1, desiredNumberScheduled: 1, updatedNumberScheduled: 1, numberAvailable: 0 },
    };
    expect(rolloutStatus(ds)).toMatchObject({
      message: 'Waiting for daemon set "agent" rollout to finish: 0 of 1 updated pods are available...',
    });
    expect(rolloutStatus({ ...ds, spec: { updateStrategy: { type: "OnDelete" } } })).toEqual({
      error: "rollout status is only available for RollingUpdate strategy type",
    });
    expect(rolloutStatus({ kind: "Job", metadata: { name: "j" } })).toEqual({
      error: "no status viewer has been implemented for Job",
    });
  });
});

const rs = (revision: string, image: string, annotations: Record<string, string> = {}) => ({
  metadata: {
    name: `web-${revision}`,
    ownerReferences: [{ uid: "d-uid" }],
    annotations: { "deployment.kubernetes.io/revision": revision, ...annotations },
  },
  spec: { template: { metadata: { labels: { app: "web", "pod-template-hash": `h${revision}` } }, spec: { image } } },
});

describe("rollout history and undo (history.go, rollback.go)", () => {
  const revs = revisions("d-uid", [
    rs("2", "b", { "kubernetes.io/change-cause": "image b" }),
    rs("1", "a"),
    {
      metadata: {
        name: "other",
        ownerReferences: [{ uid: "x" }],
        annotations: { "deployment.kubernetes.io/revision": "9" },
      },
    },
  ]);
  it("lists the Deployment's ReplicaSets by revision, with their change-cause", () => {
    expect(revs.map((r) => r.revision)).toEqual([1, 2]);
    expect(historyTable(revs)).toBe("REVISION  CHANGE-CAUSE\n1         <none>\n2         image b\n");
    expect(historyTable([])).toBe("No rollout history found.");
  });
  it("undo: the previous revision's template without its hash label, its annotations; or kubectl's refusals", () => {
    const d = {
      metadata: { name: "web", annotations: { "deployment.kubernetes.io/revision": "2", keep: "x" } },
      spec: { template: { metadata: { labels: { app: "web" } }, spec: { image: "b" } } },
    };
    const r = rollback(d, revs, 0);
    expect(r).toEqual({
      deployment: {
        metadata: { name: "web", annotations: { "deployment.kubernetes.io/revision": "2" } },
        spec: { template: { metadata: { labels: { app: "web" } }, spec: { image: "a" } } },
      },
    });
    expect(rollback(d, revs, 2)).toEqual({
      skipped: "skipped rollback (current template already matches revision 2)",
    });
    expect(rollback(d, revs, 7)).toEqual({ error: "unable to find specified revision 7 in history" });
    expect(rollback(d, revs.slice(0, 1), 0)).toEqual({ error: 'no rollout history found for deployment "web"' });
    expect(rollback({ ...d, spec: { ...d.spec, paused: true } }, revs, 0)).toMatchObject({
      error: expect.stringContaining("you cannot rollback a paused deployment"),
    });
  });
});

describe("the CLI's edits and describe", () => {
  it("editable drops status and the API server's metadata", () => {
    const stored = {
      metadata: { name: "w", uid: "u", generation: 3, creationTimestamp: "t", ownerReferences: [] },
      status: { replicas: 1 },
      spec: {},
    };
    const w = editable(stored);
    expect(w).toEqual({ metadata: { name: "w", uid: "u" }, spec: {} });
  });
  it("describe: kubectl's fields for a Job and a CronJob, aligned as kubectl's tab writer aligns them", () => {
    const template = { spec: { restartPolicy: "Never", containers: [{ name: "main", image: "localhost/busybox:1" }] } };
    const job = describeWorkload({
      obj: {
        kind: "Job",
        metadata: { name: "count", namespace: "default" },
        spec: { completions: 3, template },
        status: { succeeded: 3 },
      },
      now: 0,
    });
    expect(job).toMatch(/^Name:\s+count\nNamespace:\s+default\nSelector:\s+<none>\n/);
    expect(job).toMatch(/\nPods Statuses:\s+0 Active \(0 Ready\) \/ 3 Succeeded \/ 0 Failed\n/);
    expect(job).toMatch(
      /\nPod Template:\n {2}Labels: {2}<none>\n {2}Containers:\n {3}main:\n {4}Image:\s+localhost\/busybox:1\n/,
    );
    expect(job).toMatch(/\nEvents:\s+<none>\n$/);
    const cj = describeWorkload({
      obj: {
        kind: "CronJob",
        metadata: { name: "tick" },
        spec: { schedule: "* * * * *", jobTemplate: { spec: { template } } },
      },
      now: 0,
    });
    expect(cj).toMatch(/\nSchedule:\s+\* \* \* \* \*\n/);
    expect(cj).toMatch(/\nActive Jobs:\s+<none>\n/);
  });
  it("tabwrite aligns a column over the consecutive lines that have it (Go's text/tabwriter, padding 2)", () => {
    expect(tabwrite(["Name:\tweb", "Replicas:\t3", "Pod Template:", "  Labels:\tapp=web"])).toEqual([
      "Name:      web",
      "Replicas:  3",
      "Pod Template:",
      "  Labels:  app=web",
    ]);
  });
});

describe("a StatefulSet's claims as PersistentVolumeClaims", () => {
  it("one per template and ordinal, Bound, unless a claim of that name was sent", () => {
    const set = {
      metadata: { name: "db", namespace: "shop", uid: "s1", creationTimestamp: "2026-01-01T00:00:00Z" },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "db" } },
        volumeClaimTemplates: [
          {
            metadata: { name: "data" },
            spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
          },
        ],
      },
    };
    const sent = { metadata: { name: "data-db-1", namespace: "shop" } };
    const claims = statefulSetClaims([set], [sent]);
    expect(claims.map((c) => c.metadata.name)).toEqual(["data-db-0"]);
    expect(claims[0]).toMatchObject({
      kind: "PersistentVolumeClaim",
      metadata: { namespace: "shop", labels: { app: "db" } },
      status: { phase: "Bound", capacity: { storage: "1Gi" } },
    });
    expect(statefulSetClaims([set], [])[0]!.metadata.uid).toBe(statefulSetClaims([set], [])[0]!.metadata.uid);
    // Retained directories: one past the set's replicas keeps its template's claim (and uid); one of a set that is
    // gone is a bare Bound claim; a directory of a claim listed already is not listed twice.
    const dirs = [
      { namespace: "shop", name: "data-db-0" },
      { namespace: "shop", name: "data-db-3" },
      { namespace: "shop", name: "data-old-0" },
    ];
    const retained = statefulSetClaims([set], [sent], dirs);
    expect(retained.map((c) => c.metadata.name)).toEqual(["data-db-0", "data-db-3", "data-old-0"]);
    expect(retained[1]).toMatchObject({
      metadata: { labels: { app: "db" } },
      status: { capacity: { storage: "1Gi" } },
    });
    expect(retained[2]).toMatchObject({ metadata: { namespace: "shop" }, status: { phase: "Bound" } });
    expect(JSON.stringify(retained[2])).not.toContain("capacity");
    const alone = statefulSetClaims<{ metadata: { name: string; uid?: string } }>([], [], [dirs[1]!]);
    expect(alone[0]!.metadata.uid).not.toBe((retained[1] as { metadata: { uid?: string } }).metadata.uid);
  });
});
