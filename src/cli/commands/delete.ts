// podsync delete: stop and remove pods and forget them (DELETE /v1/pods/{uid}), as kubectl delete pod does; and
// workloads, named TYPE/NAME or TYPE NAME (DELETE /v1/workloads/{uid}, with --cascade: workload-delete.ts).
import { fail, usage } from "../args.js";
import type { Command } from "../command.js";
import type { Ctx } from "../client.js";
import { containerLines, stepLines, type ContainerLinesInput, type Step } from "../output.js";
import { podName, resolvePod } from "../pod-ref.js";
import { parseDuration, progress } from "../progress.js";
import { deletableTypeNames, workloadKindNamed } from "../resources/index.js";
import type { WorkloadKind } from "../../pod/workloads/schema.js";
import { deleteWorkload, parseCascade, refuseOrphan } from "../workloads/delete.js";
import { resolveWorkload } from "../workloads/ref.js";

/** kubelet's default when the pod gives none (pkg/apis/core/v1/defaults.go: DefaultTerminationGracePeriodSeconds). */
const DEFAULT_GRACE_S = 30;

const del: Command = {
  usage: [
    "delete [pod] NAME... [-n NS] [--grace-period=SECONDS | --now] [--wait=false] [--json]",
    "delete TYPE/NAME... | TYPE NAME... [-n NS] [--cascade=background|foreground] [--timeout=DURATION] [--json]",
  ],
  help: "Stop the pods' containers (each gets its grace period, then SIGKILL), remove their sandboxes and forget them:\nthe node stops keeping them running. Answers when they are gone (kubectl's --wait); with --wait=false, as soon\nas the node has taken them out of its desired state (the kill goes on there). A pod is named by its name or uid.\nA workload (deployment/deploy, replicaset/rs, statefulset/sts, daemonset/ds, job, cronjob/cj, pvc) is forgotten\nwith what it made: --cascade=background (the default) answers at once and its pods go at the controllers' next\npass; --cascade=foreground waits until its pods and the workloads it made are gone. --cascade=orphan is refused:\nthe node removes the pods of a workload that is gone.",
  examples: [
    "podsync delete web",
    "podsync delete pod/web -n prod --now",
    "podsync delete deployment/web",
    "podsync delete deploy web api --cascade=foreground",
    "podsync delete web --grace-period=5",
    "podsync delete web --wait=false",
  ],
  options: {
    "grace-period": {
      type: "string",
      help: "seconds each container gets to stop (default: the pod's terminationGracePeriodSeconds, else 30)",
    },
    now: { type: "boolean", help: "stop at once (the same as --grace-period=1)" },
    wait: {
      type: "boolean",
      help: "wait until the pod is gone (the default); --wait=false answers once the node took it out of the desired state",
    },
    json: { type: "boolean", help: "print the node's answer as JSON" },
    cascade: {
      type: "string",
      help: "for workloads: background (default) or foreground (wait for its pods); orphan is refused",
    },
    timeout: { type: "string", help: "how long --cascade=foreground waits, e.g. 60s (default: no limit)" },
  },
  async run(ctx) {
    const o = ctx.o;
    const targets = deleteTargets(ctx);
    const args = targets.flatMap((t) => (t.kind ? [] : [t.name]));
    const cascade = parseCascade(o["cascade"], ctx.command);
    let deadline: number | undefined;
    if (o["timeout"] !== undefined) {
      const ms = parseDuration(String(o["timeout"]));
      if (ms === undefined) usage("--timeout must be a duration such as 30s or 5m", ctx.command);
      deadline = ms > 0 ? Date.now() + ms : undefined;
    }
    const wait = o["wait"] !== false;
    let grace: number | undefined;
    if (o["grace-period"] !== undefined) {
      grace = Number(o["grace-period"]);
      if (!Number.isInteger(grace) || grace < -1)
        usage("--grace-period must be a whole number of seconds (-1: the pod's own)", ctx.command);
      if (grace === -1) grace = undefined;
    }
    if (o["now"]) {
      if (grace !== undefined) usage("--now and --grace-period cannot both be given", ctx.command);
      grace = 1;
    }
    if (cascade === "orphan" && targets.some((t) => t.kind)) refuseOrphan();
    // Every workload named is looked up first: a name not found deletes nothing.
    const workloads = [];
    for (const t of targets) if (t.kind) workloads.push(await resolveWorkload(ctx, t.kind, t.name));
    for (const ref of workloads) await deleteWorkload(ctx, ref, { cascade, wait, deadline, json: Boolean(o["json"]) });
    let failed = false;
    for (const arg of args) {
      const ref = await resolvePod(ctx, podName(arg));
      const seconds = grace ?? ref.pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_S;
      const started = Date.now();
      const p = progress(ctx);
      if (wait)
        p.every(() => {
          const left = Math.max(0, seconds - Math.floor((Date.now() - started) / 1000));
          p.update(
            `deleting pod "${ref.name}": stopping its containers (grace period ${seconds}s, ${left}s left${left === 0 ? ", then SIGKILL" : ""})`,
          );
        });
      let body: Record<string, unknown>;
      try {
        body = await ctx.call("DELETE", `/v1/pods/${encodeURIComponent(ref.uid)}${wait ? "" : "?wait=false"}`, {
          act: "delete",
          uid: ref.uid,
          ...(grace !== undefined ? { gracePeriodSeconds: grace } : {}),
        });
      } finally {
        p.done();
      }
      if (o["json"]) console.log(JSON.stringify(body, null, 2));
      else if (body["ok"] === false) {
        failed = true;
        process.stderr.write(
          `${[
            `podsync: pod "${ref.name}" deleted from the desired state, but not every step succeeded:`,
            ...stepLines((body["steps"] as Step[] | undefined) ?? []),
            ...containerLines(body["runtime"] as ContainerLinesInput),
          ].join("\n")}\n`,
        );
      } else console.log(`pod "${ref.name}" deleted`);
    }
    if (failed)
      fail("some pods were not fully removed (see above); the loop does not bring them back, run delete again");
  },
};
export default del;

interface Target {
  /** undefined: a pod. */
  kind: WorkloadKind | undefined;
  name: string;
}

const POD_TYPE = /^(pods?|po)$/i;

/** kubectl's forms: TYPE NAME..., TYPE/NAME... (types may differ), and podsync's bare NAME... for pods. */
function deleteTargets(ctx: Ctx): Target[] {
  const args = ctx.args;
  if (!args.length) usage("delete needs a pod name (or uid), or TYPE/NAME (e.g. deployment/web)", ctx.command);
  const first = args[0]!;
  if (!first.includes("/") && (POD_TYPE.test(first) || workloadKindNamed(first))) {
    const names = args.slice(1);
    if (!names.length)
      usage(`delete ${first} needs a name: delete ${first} NAME, or delete ${first}/NAME`, ctx.command);
    const bad = names.find((n) => n.includes("/"));
    if (bad)
      usage(
        `there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (got ${first} ${bad})`,
        ctx.command,
      );
    const kind = POD_TYPE.test(first) ? undefined : workloadKindNamed(first);
    return names.map((name) => ({ kind, name }));
  }
  return args.map((a) => {
    const m = /^([^/]+)\/(.+)$/.exec(a);
    if (!m) return { kind: undefined, name: a };
    if (POD_TYPE.test(m[1]!)) return { kind: undefined, name: m[2]! };
    const kind = workloadKindNamed(m[1]!);
    if (!kind)
      return usage(
        `the server doesn't have a resource type "${m[1]}" (delete knows ${deletableTypeNames().join(", ")})`,
        ctx.command,
      );
    return { kind, name: m[2]! };
  });
}
