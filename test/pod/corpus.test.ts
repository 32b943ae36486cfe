// The corpus: real pod manifests from public repositories (test/fixtures/manifests/, sources and licences in
// its README), each signed and sent through POST /v1/pods/plan in front of the in-process CRI runtime:
// validation, the owner's policy, admission against the node, then computePodActions. The test prints how many
// are accepted and why each other one is refused, and asserts every outcome, so a change in either direction
// shows. When a field family lands, move its manifests from `refused` to `accepted` here.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { Harness, startStack, type Stack } from "../support/http.js";
import type { NodeInfo } from "../../src/lifecycle/predicates.js";
import { nodeVolumeHost } from "../../src/host/volumes/volume-host.js";

const DIR = join(import.meta.dirname, "..", "fixtures", "manifests");

/** An ordinary small node: kubelet's default labels, 4 cores, 8 GiB, no taints. */
const node: NodeInfo = {
  name: "corpus-node",
  labels: { "kubernetes.io/hostname": "corpus-node", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64" },
  taints: [],
  allocatable: { milliCPU: 4000, memory: 8 * 2 ** 30, pods: 110 },
};

type Outcome = "accepted" | `${"invalid-pod" | "admission" | "policy"}: ${string}`;

/** Every manifest's expected outcome: accepted, or the problem and every refused field (invalid-pod; a volume
 * of a kind podsync lacks also fails the hostPath branch it is closest to) or kubelet's reason (admission). */
const expected: Record<string, Outcome> = {
  "cpu-request-limit.yaml": "accepted",
  "exec-liveness.yaml": "accepted",
  "envars.yaml": "accepted",
  "fluentd-daemonset.pod.yaml": "accepted",
  "grpc-liveness.yaml": "accepted",
  "guestbook-frontend.pod.yaml": "accepted",
  "guestbook-redis-master.pod.yaml": "accepted",
  "http-liveness.yaml": "accepted",
  "init-containers.yaml": "accepted",
  "mysql-pod.yaml": "accepted",
  "nginx-deployment.pod.yaml": "accepted",
  "pod-nginx-preferred-affinity.yaml": "accepted",
  "pod-with-affinity-anti-affinity.yaml": "accepted",
  "pod-with-pod-affinity.yaml": "accepted",
  "pod-with-toleration.yaml": "accepted",
  "pv-pod.yaml": "accepted",
  "qos-pod.yaml": "accepted",
  "seccomp-default-pod.yaml": "accepted",
  "security-context.yaml": "accepted",
  "simple-pod.yaml": "accepted",
  "tcp-liveness-readiness.yaml": "accepted",
  // The downward API and env from the pod's own fields (#13 objects).
  "dapi-envars-pod.yaml": "accepted",
  "rethinkdb-admin-pod.yaml": "accepted",
  // Refused by admission against this node, with kubelet's reasons: right for this node.
  "cpu-request-limit-2.yaml": "admission: OutOfcpu",
  "memory-request-limit-3.yaml": "admission: OutOfmemory",
  "pod-nginx.yaml": "admission: NodeAffinity",
  "pod-nginx-required-affinity.yaml": "admission: NodeAffinity",
  "pod-nginx-specific-node.yaml": "admission: NodeName",
  // The ConfigMap it mounts lives in another upstream file: no longer refused for that (the pod would wait,
  // FailedMount, until a sync brings it, as on a cluster); this plan runs without node files, so the volume is.
  "pod-configmap-volume.yaml": "invalid-pod: spec.volumes[0].configMap",
  // A pull secret not in the body is still refused (kubelet would pull without it, warning
  // FailedToRetrieveImagePullSecret; podsync refuses rather than pull a private image anonymously).
  "private-reg-pod.yaml": "invalid-pod: spec.imagePullSecrets[0].name",
  // Refused at validation, and meant to stay so: a token needs an API server; lifecycle hooks, scheduling gates,
  // device-plugin resources and disk emptyDir limits are not honoured on this node.
  "extended-resource-pod.yaml":
    "invalid-pod: spec.containers[0].resources.limits.example.com/dongle, spec.containers[0].resources.requests.example.com/dongle",
  "lifecycle-events.yaml": "accepted",
  "pod-projected-svc-token.yaml": "invalid-pod: spec.volumes[0].projected.sources[0].serviceAccountToken",
  "pod-with-scheduling-gates.yaml": "invalid-pod: spec.schedulingGates",
  "shared-volume.yaml": "accepted",
};

let stack: Stack;
let h: Harness;
beforeAll(async () => {
  stack = await startStack({ timeoutMs: 1500, maxBodyBytes: 64 * 1024 });
  // The corpus measures what podsync can honour; hostPath and host namespaces are the owner's call (policy).
  // The Node entry's volume host (plan touches no file; a claim needs one to be accepted at all).
  h = await Harness.start(
    stack.cri,
    { nodeInfo: node, policy: { level: "privileged", hostPathAllow: [] } },
    {},
    { volumeHost: nodeVolumeHost, localStorageLimits: true },
  );
});
afterAll(async () => {
  await h.close();
  await stack.close();
});

describe("corpus of real manifests through validation, admission and plan", () => {
  it("accepts what the node can honour and refuses the rest, each for its stated reason", async () => {
    const files = readdirSync(DIR)
      .filter((f) => f.endsWith(".yaml"))
      .sort();
    const got: Record<string, Outcome> = {};
    const detail: string[] = [];
    for (const f of files) {
      const pod = parse(readFileSync(join(DIR, f), "utf8"));
      // podsync names pods by uid (the signer gives one); a manifest written for an API server has none.
      pod.metadata.uid ??= `corpus-${f.replace(/\.yaml$/, "").replace(/[^A-Za-z0-9]/g, "-")}`;
      const r = await h.post("/v1/pods/plan", pod);
      if (r.status === 200) got[f] = "accepted";
      else {
        const slug = String(r.body.type).replace("urn:podsync:problem:", "");
        const paths = (r.body.errors ?? []).map((e: { path: string }) => e.path.replace(/^pod\./, "")).join(", ");
        got[f] = `${slug}: ${slug === "admission" ? r.body.reason : paths}` as Outcome;
        detail.push(
          `  ${f}: ${r.status} ${slug}: ${(r.body.errors ?? []).map((e: { path: string; message: string }) => `${e.path}: ${e.message}`).join("; ") || r.body.detail}`,
        );
      }
    }
    const accepted = Object.values(got).filter((o) => o === "accepted").length;
    console.log(`corpus: ${accepted} of ${files.length} manifests accepted\nrefused:\n${detail.join("\n")}`);
    expect(got).toEqual(expected);
    expect(accepted).toBe(25);
  });
});
