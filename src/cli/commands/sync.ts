// podsync sync / plan: sign a pod and POST it to /v1/pods/sync (or /plan).
import { fail } from "../args.js";
import type { Command } from "../command.js";
import { printResult } from "../output.js";
import { readPod } from "../pod-files.js";

const sync: Command = {
  usage: ["sync POD.(yaml|json) [--plan] [--json]", "plan POD.(yaml|json) [--json]"],
  help: "Sign the pod and POST it to /v1/pods/sync: the node stores it and makes it run. With --plan (or as\n`podsync plan`), POST /v1/pods/plan: what the node would do, doing nothing.",
  examples: ["podsync sync examples/pod.yaml", "podsync plan examples/pod.yaml"],
  options: { plan: { type: "boolean" }, json: { type: "boolean" } },
  async run(ctx) {
    const [file] = ctx.args;
    if (!file) fail(`${ctx.command} needs a pod file`);
    const act = ctx.command === "plan" || ctx.o["plan"] ? "plan" : "sync";
    const token = await ctx.sign({ act, ...(await readPod(file)) });
    const r = await fetch(`${ctx.url}/v1/pods/${act}`, { method: "POST", headers: { "content-type": "application/jose" }, body: token });
    const body = (await r.json()) as Record<string, unknown>;
    if (ctx.o["json"]) console.log(JSON.stringify(body, null, 2));
    else printResult(r.status, body);
    process.exitCode = r.ok && body["ok"] !== false ? 0 : 1;
  },
};
export default sync;
