// Admission against the node on a REAL containerd, through the HTTP server: a pod written for a cluster
// (nodeSelector on kubelet's default labels, tolerations, an inert scheduler field, a kubectl export's
// read-only fields) runs; one the node cannot take is refused with kubelet's reason and leaves no sandbox.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { cpus, totalmem } from "node:os";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import { nodeInfoFrom, nodeAdmissionSettingsShape } from "../../src/settings/node-info.js";
import { Harness, NODE } from "../support/http.js";
import { uid, deleteAll } from "../support/pods.js";
import { z } from "zod";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

let cri: CriClient;
let h: Harness;
const made: string[] = [];

const podInput = (name: string, spec: Record<string, unknown>, metadata: Record<string, unknown> = {}) => {
  const id = uid(name);
  made.push(id);
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", uid: id, ...metadata },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: "main", image: "localhost/busybox:1", imagePullPolicy: "IfNotPresent", command: ["sleep", "3600"] },
      ],
      ...spec,
    },
  };
};

describe.skipIf(skip)("admission against the node, on real containerd", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
    // The node as node.ts builds it: the machine's arch, cores and memory, plus an owner's label and taint.
    const settings = z
      .object(nodeAdmissionSettingsShape)
      .parse({ PODSYNC_NODE_LABELS: "site=lab", PODSYNC_NODE_TAINTS: "dedicated=podsync:NoSchedule" });
    const nodeInfo = nodeInfoFrom(settings, NODE, { arch: process.arch, cpus: cpus().length, memoryBytes: totalmem() });
    h = await Harness.start(cri, { nodeInfo, desired: new MemoryDesiredState() });
  });
  afterAll(async () => {
    await deleteAll(createPodRuntime(cri), made);
    await h?.close();
    cri?.close();
  });

  it("nodeSelector kubernetes.io/os=linux (with the node's arch and the owner's label) and a toleration: accepted and running", async () => {
    const p = podInput(
      "selected",
      {
        nodeSelector: {
          "kubernetes.io/os": "linux",
          "kubernetes.io/arch": process.arch === "x64" ? "amd64" : process.arch,
          site: "lab",
        },
        tolerations: [{ key: "dedicated", operator: "Equal", value: "podsync", effect: "NoSchedule" }],
        affinity: {
          podAntiAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              { weight: 1, podAffinityTerm: { topologyKey: "kubernetes.io/hostname" } },
            ],
          },
        },
        priorityClassName: "high",
        serviceAccountName: "web",
        automountServiceAccountToken: false,
      },
      {
        resourceVersion: "42",
        creationTimestamp: "2024-01-01T00:00:00Z",
        ownerReferences: [{ kind: "ReplicaSet", name: "web" }],
      },
    );
    const r = await h.post("/v1/pods/sync", { ...p, status: { phase: "Pending" } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.steps.map((s: { action: string }) => s.action)).toEqual(
      expect.arrayContaining(["CreatePodSandbox", "StartContainer"]),
    );
    expect(r.body.status.containerStatuses[0].state.running).toBeDefined();
  });

  it("a selector the node does not satisfy: 403 NodeAffinity, and the runtime has no sandbox for the pod", async () => {
    const p = podInput("elsewhere", {
      nodeSelector: { "kubernetes.io/os": "windows" },
      tolerations: [{ key: "dedicated", operator: "Exists" }],
    });
    const r = await h.post("/v1/pods/sync", p);
    expect(r.status, JSON.stringify(r.body)).toBe(403);
    expect(r.body).toMatchObject({
      type: "urn:podsync:problem:admission",
      reason: "NodeAffinity",
      detail: "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    });
    const sandboxes = await cri.listPodSandbox({
      filter: { labelSelector: { "io.kubernetes.pod.uid": p.metadata.uid } },
    });
    expect(sandboxes.items).toEqual([]);
  });

  it("the owner's NoSchedule taint untolerated: 403 TaintToleration", async () => {
    const r = await h.post("/v1/pods/sync", podInput("intolerant", {}));
    expect(r.status, JSON.stringify(r.body)).toBe(403);
    expect(r.body).toMatchObject({
      reason: "TaintToleration",
      errors: [{ path: "spec.tolerations", message: expect.stringContaining("{dedicated=podsync:NoSchedule}") }],
    });
  });
});
