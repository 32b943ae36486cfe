// What the node's controllers would do with a body's workloads, for POST /v1/pods/plan (and the CLI's plan and
// apply --dry-run): the controllers' own passes (run.ts), run on copies of the node's stores, with nothing of the
// node touched. Every pod a controller keeps is taken to start and become Ready at once, so the passes go on until
// the controllers would make or delete nothing more: the pods a Deployment, ReplicaSet, StatefulSet or DaemonSet
// converges to, and a Job's first wave (its pods are taken to keep running, so none succeeds or fails). A CronJob
// makes nothing until its schedule comes due, so its plan lists none.
//
// Names, as the controllers make them: exact where they are determined (a StatefulSet's `<name>-<ordinal>`, a
// Deployment's ReplicaSet `<name>-<pod-template-hash>`); where the API server would add generateName's 5 random
// characters (a ReplicaSet's, DaemonSet's or Job's pods), the plan cannot know them and says so: `name` is
// `<generateName><random>` and `generateName` is given (kubectl's server-side dry run would show a name the real
// create would not use).
import { MemoryDesiredState, type DesiredPod } from "../pleg/desired-state.js";
import type { V1PodStatus } from "../status/api-status.js";
import type { Workload } from "../pod/workloads/schema.js";
import type { NodeInfo } from "../lifecycle/predicates.js";
import { controllerOf, randomSuffix } from "./pods.js";
import { createControllers } from "./run.js";
import { MemoryWorkloadStore, workloadKey, type StoredWorkload } from "./store.js";
import type { Condition } from "./types.js";

export const RANDOM_SUFFIX_PLACEHOLDER = "<random>";

export interface PlannedPod {
  namespace: string;
  name: string;
  /** Set when the name ends in generateName's random characters, which the plan cannot know. */
  generateName?: string;
  /** Given when it is known (a pod that exists, or a name without random characters). */
  uid?: string;
  /** The workload that makes it (the ReplicaSet of a Deployment, the Job of a CronJob), and the body's workload. */
  owner: { kind: string; name: string };
  workload: { kind: string; name: string };
  /** create: a controller would make it; delete: a controller would delete it; keep: it stays as it is. */
  action: "create" | "delete" | "keep";
}

export interface WorkloadPlan {
  pods: PlannedPod[];
  /** Pods a controller would make that the node would refuse (kubelet's admission), and a controller's error, per
   * workload. */
  refused: { kind: string; namespace: string; name: string; message: string }[];
}

export interface PlanInput {
  /** The node's stored workloads, and the body's (replacing those of the same kind, namespace and name). */
  stored: readonly StoredWorkload[];
  incoming: readonly StoredWorkload[];
  /** The node's desired pods (and the body's pod, if any). */
  desired: readonly DesiredPod[];
  nodeName: string;
  node?: NodeInfo | undefined;
  now: number;
  /** The node owner's policy on the controllers' pods, as the node's controllers hold them to it (gate.ts). */
  admitTemplate?: ((pod: DesiredPod["pod"]) => string | undefined) | undefined;
}

/** A pod's status once it started and became Ready (long enough ago for any minReadySeconds). */
const READY: V1PodStatus = {
  phase: "Running",
  conditions: [{ type: "Ready", status: "True", lastProbeTime: null, lastTransitionTime: new Date(0).toISOString() }],
  containerStatuses: [],
  qosClass: "BestEffort",
};

export async function planWorkloads(input: PlanInput): Promise<WorkloadPlan> {
  const workloads = new MemoryWorkloadStore();
  const incomingKeys = new Set(input.incoming.map((w) => workloadKey(w.workload)));
  await workloads.putAll([
    ...input.stored.filter((w) => !incomingKeys.has(workloadKey(w.workload))).map((w) => structuredClone(w)),
    ...input.incoming.map((w) => structuredClone(w)),
  ]);
  const desired = new MemoryDesiredState();
  for (const e of input.desired) await desired.put(structuredClone(e));
  const before = new Map(input.desired.map((e) => [e.pod.metadata.uid, e.pod]));
  const { suffix, generated } = planSuffixes();
  /** A controller's error on a workload (it would be logged on the node): said in the plan too. */
  const failed = new Map<string, string>();
  const log = (rec: Record<string, unknown>) => {
    if (rec["event"] === "error" && rec["what"] === "controller")
      failed.set(String(rec["workload"]), String(rec["error"]));
  };
  const controllers = createControllers({
    workloads,
    desired,
    runtime: {
      delete: async (uid) => ({
        ok: true,
        pod: { namespace: "", name: "", uid },
        steps: [],
        deleted: false,
        wasRunning: false,
        criCalls: 0,
      }),
    },
    nodeName: input.nodeName,
    ...(input.node ? { node: input.node } : {}),
    // The node's bounds and policy, as its own controllers apply them to stored workloads.
    ...(input.node?.allocatable.pods !== undefined ? { limits: { maxPods: input.node.allocatable.pods } } : {}),
    ...(input.admitTemplate ? { admitTemplate: input.admitTemplate } : {}),
    suffix,
    log,
  });
  const made = new Map<string, DesiredPod["pod"]>();
  const gone = new Map<string, DesiredPod["pod"]>();
  const maxPasses =
    20 +
    4 *
      input.incoming.reduce(
        (n, w) => n + Math.max(1, Number((w.workload as { spec?: { replicas?: number } }).spec?.replicas ?? 1)),
        0,
      );
  for (let i = 0, quiet = 0; i < maxPasses && quiet < 2; i++) {
    const pods = new Map((await desired.list()).map((e) => [e.pod.metadata.uid, e.pod]));
    const r = await controllers.pass(input.now, () => READY);
    await controllers.settle();
    for (const uid of r.created) made.set(uid, (await desired.get(uid))!.pod);
    for (const uid of r.deleted) {
      const p = pods.get(uid) ?? made.get(uid);
      if (p && made.has(uid) && !before.has(uid)) made.delete(uid);
      else if (p) gone.set(uid, p);
    }
    quiet = r.created.length || r.deleted.length ? 0 : quiet + 1;
  }

  // Which body workload each pod belongs to: its controller, or its controller's controller.
  const all = await workloads.list();
  const byUid = new Map([...all, ...input.stored].map((w) => [w.workload.metadata.uid!, w]));
  const bodyUids = new Set(input.incoming.map((w) => w.workload.metadata.uid!));
  const root = (uid: string | undefined): Workload | undefined => {
    for (let n = 0, u = uid; u !== undefined && n < 4; n++) {
      const w = byUid.get(u);
      if (!w) return undefined;
      if (bodyUids.has(u)) return w.workload;
      u = w.owner?.uid;
    }
    return undefined;
  };
  const out: PlannedPod[] = [];
  const add = (pod: DesiredPod["pod"], action: PlannedPod["action"]) => {
    const ref = controllerOf(pod.metadata);
    const top = root(ref?.uid);
    if (!ref || !top) return;
    const name = pod.metadata.name;
    const random = action === "create" && generated.has(name.slice(-5));
    out.push({
      namespace: pod.metadata.namespace,
      name: random ? `${name.slice(0, -5)}${RANDOM_SUFFIX_PLACEHOLDER}` : name,
      ...(random ? { generateName: name.slice(0, -5) } : { uid: pod.metadata.uid }),
      owner: { kind: ref.kind, name: ref.name },
      workload: { kind: top.kind, name: top.metadata.name },
      action,
    });
  };
  for (const p of made.values()) add(p, "create");
  for (const p of gone.values()) add(p, "delete");
  for (const [uid, p] of before) if (!gone.has(uid)) add(p, "keep");
  return { pods: out, refused: refusals(all, root, failed) };
}

/** Distinct suffixes in generateName's alphabet (a counter's base-27 digits), so every made name is unique; the
 * suffixes made, so the plan knows a name's last 5 characters are the API server's random ones. */
function planSuffixes(): { suffix: () => string; generated: Set<string> } {
  const generated = new Set<string>();
  let seq = 0;
  const suffix = () => {
    const digits = (seq++)
      .toString(27)
      .padStart(5, "0")
      .split("")
      .map((d) => parseInt(d, 27));
    const s = randomSuffix(5, () => (digits.shift()! + 0.5) / 27);
    generated.add(s);
    return s;
  };
  return { suffix, generated };
}

/** The body's workloads the node would refuse pods for (ReplicaFailure), and those whose controller failed. */
function refusals(
  all: readonly StoredWorkload[],
  root: (uid: string | undefined) => Workload | undefined,
  failed: Map<string, string>,
): WorkloadPlan["refused"] {
  const refused: WorkloadPlan["refused"] = [];
  for (const w of all) {
    const top = root(w.workload.metadata.uid);
    const f = ((w.status?.["conditions"] as Condition[] | undefined) ?? []).find(
      (c) => c.type === "ReplicaFailure" && c.status === "True",
    );
    if (top && f)
      refused.push({
        kind: w.workload.kind,
        namespace: w.workload.metadata.namespace,
        name: w.workload.metadata.name,
        message: f.message ?? f.reason ?? "refused",
      });
    const error = failed.get(workloadKey(w.workload));
    if (top && error)
      refused.push({
        kind: w.workload.kind,
        namespace: w.workload.metadata.namespace,
        name: w.workload.metadata.name,
        message: `its controller failed: ${error}`,
      });
  }
  return refused;
}
