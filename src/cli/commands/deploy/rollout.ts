// Package cli/commands/deploy — kubectl's deployment verbs against a node: scale and rollout.
// Imports the CLI's client, workloads and printers; never the server's packages.
//
// podsync rollout status|restart|undo|history|pause|resume TYPE/NAME: kubectl rollout (cmd/rollout/*.go) against a
// node. Reads are GET /v1/workloads (status token); edits are the stored workload changed as kubectl's patch would
// change it, signed and sent as a sync (workloads/edit.ts). The decisions are workloads/rollout.ts.
//   status   waits (polling the node every second) until done, printing each new message on stdout; exit 1 on
//            kubectl's errors (a Deployment past its progress deadline) and at --timeout; --watch=false: once.
//   restart  the template's kubectl.kubernetes.io/restartedAt annotation set to now (RFC 3339).
//   pause / resume  spec.paused (Deployments).
//   history  the Deployment's ReplicaSets by revision (REVISION CHANGE-CAUSE); --revision=N: that template.
//   undo     the template of a previous ReplicaSet revision (--to-revision=N; default the one before the latest).
import { fail, usage } from "../../args.js";
import type { Command } from "../../command.js";
import type { Ctx } from "../../client.js";
import type { WorkloadKind } from "../../../pod/workloads/schema.js";
import { parseDuration } from "../../progress.js";
import { podTemplateLines } from "../../print/describe.js";
import { checkEditable, editable, type Obj, sendWorkload } from "../../workloads/edit.js";
import { qualifiedKind, resolveWorkload, workloadArg, listWorkloads, type WorkloadRef } from "../../workloads/ref.js";
import { historyTable, RESTARTED_AT, revisions, rollback, rolloutStatus } from "../../workloads/rollout.js";

const APPS: WorkloadKind[] = ["Deployment", "DaemonSet", "StatefulSet"];
const SUBS: Record<string, WorkloadKind[]> = {
  status: APPS,
  restart: APPS,
  history: ["Deployment"],
  undo: ["Deployment"],
  pause: ["Deployment"],
  resume: ["Deployment"],
};

const rollout: Command = {
  usage: [
    "rollout status TYPE/NAME [--watch=false] [--timeout=DURATION] [-n NS]",
    "rollout restart|pause|resume TYPE/NAME [-n NS]",
    "rollout history TYPE/NAME [--revision=N] [-n NS]",
    "rollout undo TYPE/NAME [--to-revision=N] [-n NS]",
  ],
  help: `Manage a workload's rollout, as kubectl rollout does. status waits until a Deployment, StatefulSet or DaemonSet
has rolled out (exit 0), printing kubectl's messages; exit 1 when it timed out (--timeout) or exceeded its progress
deadline. restart rolls the pods (the template's restartedAt annotation); pause and resume a Deployment; history
lists a Deployment's revisions (its ReplicaSets); undo goes back to the previous revision (or --to-revision).
Edits are signed with your key and sent as a sync of the node's stored workload.`,
  examples: [
    "podsync rollout status deployment/web --timeout=2m",
    "podsync rollout restart deploy/web",
    "podsync rollout history deploy/web",
    "podsync rollout undo deploy/web --to-revision=1",
    "podsync rollout pause deploy/web",
  ],
  options: {
    watch: { type: "boolean", short: "w", help: "status: wait until done (the default); --watch=false prints once" },
    timeout: { type: "string", help: "status: how long to wait, e.g. 2m (default 0: no limit)" },
    revision: { type: "string", help: "history: show this revision's pod template" },
    "to-revision": { type: "string", help: "undo: the revision to go back to (default 0: the previous one)" },
  },
  async run(ctx) {
    const [sub, ...rest] = ctx.args;
    const kinds = sub !== undefined && Object.hasOwn(SUBS, sub) ? SUBS[sub] : undefined;
    if (!sub || !kinds)
      usage(`rollout needs a subcommand: ${Object.keys(SUBS).join(", ")}${sub ? ` (got "${sub}")` : ""}`, ctx.command);
    const { kind, name } = workloadArg(rest, kinds, `rollout ${sub}`, ctx.command);
    const ref = await resolveWorkload(ctx, kind, name);
    const id = `${qualifiedKind(kind)}/${ref.name}`;
    switch (sub) {
      case "status":
        return status(ctx, ref);
      case "history":
        return history(ctx, ref, id);
      case "undo":
        return undo(ctx, ref, id);
      case "restart": {
        if ((ref.obj["spec"] as { paused?: boolean }).paused)
          fail("can't restart paused deployment (run rollout resume first)");
        checkEditable(ref, "restart");
        const w = editable(ref.obj);
        const spec = w["spec"] as { template: { metadata?: { annotations?: Record<string, string> } } };
        const meta = spec.template.metadata ?? {};
        spec.template.metadata = {
          ...meta,
          annotations: {
            ...(meta.annotations ?? {}),
            [RESTARTED_AT]: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
          },
        };
        await sendWorkload(ctx, w);
        console.log(`${id} restarted`);
        return;
      }
      default: {
        const paused = sub === "pause";
        if (Boolean((ref.obj["spec"] as { paused?: boolean }).paused) === paused) {
          console.log(`${id} already ${paused ? "paused" : "resumed"}`);
          return;
        }
        checkEditable(ref, sub);
        const w = editable(ref.obj);
        w["spec"] = { ...(w["spec"] as object), paused };
        await sendWorkload(ctx, w);
        console.log(`${id} ${paused ? "paused" : "resumed"}`);
      }
    }
  },
};
export default rollout;

/** kubectl rollout status: poll until done; each new message on stdout. */
async function status(ctx: Ctx, first: WorkloadRef): Promise<void> {
  const t = ctx.o["timeout"] === undefined ? 0 : parseDuration(String(ctx.o["timeout"]));
  if (t === undefined) usage("--timeout must be a duration such as 30s or 5m (0: no limit)", ctx.command);
  const deadline = t > 0 ? Date.now() + t : undefined;
  let obj: Obj = first.obj as unknown as Obj;
  let last = "";
  for (;;) {
    const s = rolloutStatus(obj);
    if ("error" in s) fail(s.error);
    if (s.message !== last) process.stdout.write(`${s.message}\n`);
    last = s.message;
    if (s.done || ctx.o["watch"] === false) return;
    if (deadline !== undefined && Date.now() >= deadline) fail("timed out waiting for the condition");
    await new Promise((r) => setTimeout(r, deadline === undefined ? 1000 : Math.min(1000, deadline - Date.now())));
    const now = (await listWorkloads(ctx, first.kind)).find((w) => w.metadata.uid === first.uid);
    if (!now) fail(`${qualifiedKind(first.kind)} "${first.name}" was deleted while its rollout was watched`);
    obj = now as unknown as Obj;
  }
}

async function revisionsOf(ctx: Ctx, ref: WorkloadRef) {
  return revisions(ref.uid, (await listWorkloads(ctx, "ReplicaSet")) as unknown as Obj[]);
}

async function history(ctx: Ctx, ref: WorkloadRef, id: string): Promise<void> {
  const revs = await revisionsOf(ctx, ref);
  const n = ctx.o["revision"] === undefined ? 0 : Number(ctx.o["revision"]);
  if (!Number.isInteger(n) || n < 0) usage("--revision must be a whole number (0: all)", ctx.command);
  if (n > 0) {
    const r = revs.find((r) => r.revision === n);
    if (!r) fail("unable to find the specified revision");
    const template = (r.rs["spec"] as { template: Obj }).template;
    process.stdout.write(`${id} with revision #${n}\n${podTemplateLines(template).join("\n")}\n`);
    return;
  }
  process.stdout.write(`${id} \n${historyTable(revs)}\n`);
}

async function undo(ctx: Ctx, ref: WorkloadRef, id: string): Promise<void> {
  const to = ctx.o["to-revision"] === undefined ? 0 : Number(ctx.o["to-revision"]);
  if (!Number.isInteger(to) || to < 0)
    usage("--to-revision must be a whole number (0: the previous revision)", ctx.command);
  checkEditable(ref, "undo");
  const r = rollback(editable(ref.obj), await revisionsOf(ctx, ref), to);
  if ("error" in r) fail(r.error);
  if ("skipped" in r) {
    console.log(`${id} ${r.skipped}`);
    return;
  }
  await sendWorkload(ctx, r.deployment);
  console.log(`${id} rolled back`);
}
