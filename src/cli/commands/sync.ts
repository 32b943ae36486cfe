// podsync sync / plan: sign a pod and POST it to /v1/pods/sync (or /plan).
import { fail } from "../args.js";
import type { Command } from "../command.js";
import { printResult, printWarnings } from "../output.js";
import { readPod } from "../pod-files.js";

const sync: Command = {
  usage: ["sync [-f] FILE.(yaml|json) [--plan] [--json]", "plan [-f] FILE.(yaml|json) [--json]"],
  help: "Sign the file (a pod, and/or workloads: Deployments, StatefulSets, DaemonSets, Jobs, CronJobs, with their\nConfigMaps, Secrets and claims) and POST it to /v1/pods/sync: the node stores it and makes it run. With --plan\n(or as `podsync plan`), POST /v1/pods/plan: what the node would do, doing nothing.",
  examples: ["podsync sync examples/pod.yaml", "podsync sync -f examples/deployment.yaml", "podsync plan examples/pod.yaml"],
  options: { plan: { type: "boolean" }, json: { type: "boolean" }, filename: { type: "string", short: "f" } },
  async run(ctx) {
    const file = (ctx.o["filename"] as string | undefined) ?? ctx.args[0];
    if (!file) fail(`${ctx.command} needs a pod file`);
    const act = ctx.command === "plan" || ctx.o["plan"] ? "plan" : "sync";
    const token = await ctx.sign({ act, ...(await readPod(file)) });
    const r = await fetch(`${ctx.url}/v1/pods/${act}`, { method: "POST", headers: { "content-type": "application/jose" }, body: token });
    const body = (await r.json()) as Record<string, unknown>;
    if (ctx.o["json"]) console.log(JSON.stringify(body, null, 2));
    else {
      printWarnings(body);
      if (body["pod"]) printResult(r.status, body);
      else if (!r.ok) printResult(r.status, body);
      for (const w of (body["workloads"] as { kind: string; namespace: string; name: string; action: string }[] | undefined) ?? []) console.log(`${w.kind.toLowerCase()}.${w.kind === "Job" || w.kind === "CronJob" ? "batch" : "apps"}/${w.name} (${w.namespace}) ${act === "plan" ? `would be ${w.action}` : w.action}`);
    }
    process.exitCode = r.ok && body["ok"] !== false ? 0 : 1;
  },
};
export default sync;
