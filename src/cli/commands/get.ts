// podsync get: one pod, as kubectl get pods shows it, or its v1.Pod; or the node's workloads of one kind
// (deploy, rs, sts, ds, jobs, cronjobs, pvc) as kubectl get prints them.
import { fail } from "../args.js";
import type { Command } from "../command.js";
import { printResult } from "../output.js";
import type { V1Pod } from "../../status/api-status.js";
import { WORKLOAD_RESOURCES, workloadTable } from "../workload-print.js";

const get: Command = {
  usage: ["get UID [-o json|yaml]", "get deploy|rs|sts|ds|jobs|cronjobs|pvc [NAME] [-n NAMESPACE] [-o json|yaml]"],
  help: "The pod as kubectl get pods shows it (NAME READY STATUS RESTARTS AGE), or its v1.Pod. With a workload kind,\nthe node's workloads of that kind with kubectl's columns (GET /v1/workloads).",
  examples: ["podsync get UID", "podsync get UID -o yaml", "podsync get deploy", "podsync get jobs pi -o yaml"],
  options: { output: { type: "string", short: "o" }, namespace: { type: "string", short: "n" } },
  async run(ctx) {
    const [uid, name] = ctx.args;
    if (!uid) fail("get needs a pod uid or a workload kind (deploy, rs, sts, ds, jobs, cronjobs, pvc)");
    const out = ctx.o["output"] as string | undefined;
    if (out !== undefined && out !== "json" && out !== "yaml" && out !== "wide") fail("-o must be json or yaml");
    const kind = WORKLOAD_RESOURCES[uid.toLowerCase()];
    if (kind) {
      const ns = (ctx.o["namespace"] as string | undefined) ?? "default";
      const token = await ctx.sign({ act: "status" });
      const r = await fetch(`${ctx.url}/v1/workloads?kind=${kind}`, { headers: { authorization: `Bearer ${token}` } });
      const body = (await r.json()) as { items?: { metadata: { name: string; namespace: string } }[] } & Record<string, unknown>;
      if (!r.ok) {
        printResult(r.status, body);
        process.exitCode = 1;
        return;
      }
      const items = (body.items ?? []).filter((o) => o.metadata.namespace === ns && (name === undefined || o.metadata.name === name));
      if (name !== undefined && items.length === 0) {
        console.error(`Error from server (NotFound): ${uid} "${name}" not found`);
        process.exitCode = 1;
      } else if (out === "json") console.log(JSON.stringify(name !== undefined ? items[0] : { apiVersion: "v1", kind: "List", items }, null, 2));
      else if (out === "yaml") process.stdout.write((await import("yaml")).stringify(name !== undefined ? items[0] : { apiVersion: "v1", kind: "List", items }));
      else console.log(workloadTable(kind, items, Date.now(), ns));
      return;
    }
    const token = await ctx.sign({ act: "status", uid });
    const r = await fetch(`${ctx.url}/v1/pods/${encodeURIComponent(uid)}`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await r.json()) as Record<string, unknown>;
    if (!r.ok) {
      printResult(r.status, body);
      process.exitCode = 1;
    } else if (out === "json") console.log(JSON.stringify(body, null, 2));
    else if (out === "yaml") process.stdout.write((await import("yaml")).stringify(body));
    else console.log((await import("../kubectl-print.js")).podTable([body as unknown as V1Pod], Date.now()));
  },
};
export default get;
