// The one admission pipeline (src/usecases/admission/): its stages in order with one result type, and the
// runtime's admit run once on a request's sync (the pipeline's), not again inside the sync.
import { describe, expect, it } from "vitest";
import type { NodePolicy } from "../../src/auth/policy.js";
import { createPodRuntime, type PodRuntime } from "../../src/kubelet/pod-runtime.js";
import { PodAdmissionError } from "../../src/lifecycle/node-admission.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import { InvalidPodError } from "../../src/pod/validate.js";
import { createAdmission } from "../../src/usecases/admission/admission.js";
import { AdmissionRefusedError } from "../../src/usecases/admission/refusals.js";
import { Harness } from "../support/http.js";
import { useFakeCri } from "../support/fake-cri-suite.js";
import { pod } from "../support/pods.js";

const privileged: NodePolicy = { level: "privileged", hostPathAllow: [] };
const baseline: NodePolicy = { level: "baseline", hostPathAllow: [] };
const node = { name: "node-a", labels: {}, taints: [], allocatable: {} };
const unsafeSysctl = { securityContext: { sysctls: [{ name: "kernel.panic", value: "1" }] } };
const httpProbe = {
  containers: [
    {
      name: "main",
      image: "localhost/busybox:1",
      command: ["sleep", "3600"],
      readinessProbe: { httpGet: { path: "/", port: 80 } },
    },
  ],
};

describe("the admission pipeline", () => {
  const s = useFakeCri();
  const admission = (policy: NodePolicy = privileged) =>
    createAdmission({
      policy,
      node,
      runtime: createPodRuntime(s.cri),
      probeHandlers: { allowed: ["exec"], why: "this deployment runs exec probes only" },
    });

  it("refuses at the first stage that fails, in order: policy, probes, runtime, node", () => {
    const both = pod({ ...unsafeSysctl, ...httpProbe });
    const p = admission(baseline).check([{ pod: both, prefix: "pod." }]);
    expect(p).toMatchObject({ admitted: false, stage: "policy" });
    const probes = admission().check([{ pod: both }]);
    expect(probes).toMatchObject({ admitted: false, stage: "probes" });
    expect(!probes.admitted && probes.error).toBeInstanceOf(InvalidPodError);
    const runtime = admission().check([{ pod: pod(unsafeSysctl), prefix: "pod." }]);
    expect(runtime).toMatchObject({ admitted: false, stage: "runtime" });
    expect(!runtime.admitted && (runtime.error as AdmissionRefusedError).toProblem()).toMatchObject({
      status: 403,
      reason: "SysctlForbidden",
      errors: [{ path: "pod.spec.securityContext.sysctls[0].name" }],
    });
    expect(!runtime.admitted && (runtime.error as AdmissionRefusedError).refused).toHaveLength(1);
    expect(admission().check([{ pod: pod() }])).toEqual({ admitted: true });
    // The node stage: another node's pod.
    const stage = admission().admit([{ pod: pod({ nodeName: "node-b" }) }]);
    expect(() => stage.against([])).toThrow(AdmissionRefusedError);
  });

  it("stage by stage across a body's objects: a later object's policy refusal wins over an earlier one's runtime", () => {
    const r = admission(baseline).check([
      { pod: pod(unsafeSysctl), prefix: "items[0]." },
      { pod: pod({ hostNetwork: true }), prefix: "items[1]." },
    ]);
    expect(r).toMatchObject({ admitted: false, stage: "policy" });
  });

  it("the runtime's own admit is skipped only when the caller says it admitted the pod", async () => {
    const rt = createPodRuntime(s.cri);
    const p = pod(unsafeSysctl);
    await expect(rt.plan(p)).rejects.toBeInstanceOf(PodAdmissionError);
    await expect(rt.plan(p, undefined, { admitted: true })).resolves.toMatchObject({ pod: { uid: p.metadata.uid } });
  });

  it("a request's sync runs the runtime's admit once: the pipeline's, passing `admitted` to the sync", async () => {
    const rt = createPodRuntime(s.cri, { pullBackOff: new MemoryPullBackOff() });
    let admits = 0;
    const guards: unknown[] = [];
    const counted: PodRuntime = {
      ...rt,
      admit: (p) => {
        admits++;
        rt.admit(p);
      },
      sync: (p, probes, objects, guard) => {
        guards.push(guard);
        return rt.sync(p, probes, objects, guard);
      },
    };
    const h = await Harness.start(s.cri, { runtime: counted, policy: privileged });
    try {
      const r = await h.post("/v1/pods/sync", {
        metadata: { name: "once", namespace: "default", uid: "once-1" },
        spec: { containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "3600"] }] },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(admits).toBe(1);
      expect(guards).toHaveLength(1);
      expect(guards[0]).toMatchObject({ admitted: true });
    } finally {
      await h.close();
    }
  });
});
