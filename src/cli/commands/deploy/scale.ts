// podsync scale TYPE/NAME --replicas N: kubectl scale (cmd/scale/scale.go) for the kinds with replicas: the stored
// workload with spec.replicas changed, signed and sent again (workloads/edit.ts). --current-replicas is kubectl's
// precondition. Prints kubectl's `deployment.apps/web scaled`.
import { fail, usage } from "../../args.js";
import type { Command } from "../../command.js";
import type { WorkloadKind } from "../../../pod/workloads/schema.js";
import { checkEditable, editable, sendWorkload } from "../../workloads/edit.js";
import { qualifiedKind, resolveWorkload, workloadArg } from "../../workloads/ref.js";

const KINDS: WorkloadKind[] = ["Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"];

const count = (v: unknown, flag: string, command: string): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (String(v).trim() === "" || !Number.isInteger(n) || n < 0)
    usage(`--${flag} must be a whole number from 0 (got ${JSON.stringify(v)})`, command);
  return n;
};

const scale: Command = {
  usage: ["scale TYPE/NAME | TYPE NAME --replicas=COUNT [--current-replicas=COUNT] [-n NS]"],
  help: "Set a Deployment's, ReplicaSet's, StatefulSet's or ReplicationController's replicas, as kubectl scale: the\nnode's stored workload with the new count, signed with your key and sent as a sync (its generation moves; its\ncontroller makes or removes pods at the next pass). --current-replicas refuses the change unless the count is that.",
  examples: ["podsync scale deployment/web --replicas=3", "podsync scale sts db --replicas 1 --current-replicas 2"],
  options: {
    replicas: { type: "string", help: "the new number of replicas" },
    "current-replicas": { type: "string", help: "precondition: the current number of replicas" },
  },
  async run(ctx) {
    const { kind, name } = workloadArg(ctx.args, KINDS, "scale", ctx.command);
    const replicas = count(ctx.o["replicas"], "replicas", ctx.command);
    if (replicas === undefined) usage('required flag "replicas" not set (--replicas=COUNT)', ctx.command);
    const current = count(ctx.o["current-replicas"], "current-replicas", ctx.command);
    const ref = await resolveWorkload(ctx, kind, name);
    const spec = (ref.obj["spec"] ?? {}) as { replicas?: number };
    if (current !== undefined && spec.replicas !== current)
      fail(`Expected replicas to be ${current}, was ${spec.replicas ?? 1} (nothing was changed)`);
    checkEditable(ref, "scale");
    const w = editable(ref.obj);
    w["spec"] = { ...(w["spec"] as object), replicas };
    await sendWorkload(ctx, w);
    console.log(`${qualifiedKind(kind)}/${ref.name} scaled`);
  },
};
export default scale;
