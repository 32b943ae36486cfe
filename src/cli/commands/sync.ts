// podsync sync / plan: sign a pod and POST it to /v1/pods/sync (or /plan).
import { usage } from "../args.js";
import type { Command } from "../command.js";
import { actionsLine, containerLines, stepLines, type Step } from "../output.js";
import { readPod } from "../pod-files.js";
import { progress } from "../progress.js";

const sync: Command = {
  usage: ["sync POD.(yaml|json) [--plan] [--json]", "plan POD.(yaml|json) [--json]"],
  help: "Sign the pod and POST it to /v1/pods/sync: the node stores it and makes it run (the node keeps it running\nafterwards). With --plan (or as `podsync plan`), POST /v1/pods/plan: what the node would do, doing nothing.",
  examples: ["podsync sync examples/pod.yaml", "podsync plan examples/pod.yaml", "podsync sign pod.yaml | curl ... (see podsync sign --help)"],
  options: { plan: { type: "boolean", help: "only say what the node would do" }, json: { type: "boolean", help: "print the node's answer as JSON" } },
  async run(ctx) {
    const [file] = ctx.args;
    if (!file) usage(`${ctx.command} needs a pod file`, ctx.command);
    const act = ctx.command === "plan" || ctx.o["plan"] ? "plan" : "sync";
    const token = await ctx.sign({ act, ...(await readPod(file)) });
    const p = progress(ctx);
    const started = Date.now();
    if (act === "sync") p.every(() => p.update(`syncing: ${Math.floor((Date.now() - started) / 1000)}s (pulling images, starting containers)`));
    let body: Record<string, unknown>;
    try {
      body = await ctx.json(await ctx.fetch(`/v1/pods/${act}`, { method: "POST", headers: { "content-type": "application/jose" }, body: token }));
    } finally {
      p.done();
    }
    if (ctx.o["json"]) console.log(JSON.stringify(body, null, 2));
    else {
      const pod = body["pod"] as { namespace: string; name: string; uid: string };
      const a = actionsLine((body["actions"] as Record<string, unknown> | undefined) ?? {});
      const what = act === "plan" ? (a ? `would ${a}` : "nothing to do (converged)") : body["ok"] === false ? "NOT fully synced" : a ? a : "unchanged (converged)";
      console.log([`pod/${pod.name} (${pod.namespace}, uid ${pod.uid}): ${what}`, ...stepLines((body["steps"] as Step[] | undefined) ?? []), ...containerLines(body["runtime"] as never)].join("\n"));
    }
    process.exitCode = body["ok"] === false ? 1 : 0;
  },
};
export default sync;
