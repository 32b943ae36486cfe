// podsync status: the pod's sandbox and containers as the runtime reports them (GET /v1/pods/{uid}/runtime).
import { usage } from "../args.js";
import type { Command } from "../command.js";
import { type ContainerLinesInput, containerLines } from "../output.js";
import { resolvePod } from "../pod-ref.js";

const status: Command = {
  usage: ["status NAME [-n NS] [--json]"],
  help: "The pod's sandbox and containers as the container runtime reports them (a debugging view; get shows the v1.Pod).",
  examples: ["podsync status web", "podsync status web --json"],
  options: { json: { type: "boolean", help: "the node's answer as JSON" } },
  async run(ctx) {
    const [arg] = ctx.args;
    if (!arg) usage("status needs a pod name (or uid)", ctx.command);
    const ref = await resolvePod(ctx, arg);
    const body = await ctx.call("GET", `/v1/pods/${encodeURIComponent(ref.uid)}/runtime`, {
      act: "status",
      uid: ref.uid,
    });
    if (ctx.o["json"]) console.log(JSON.stringify(body, null, 2));
    else
      console.log(
        [
          `pod ${ref.namespace}/${ref.name} (${ref.uid})`,
          ...containerLines(body["status"] as ContainerLinesInput),
        ].join("\n"),
      );
  },
};
export default status;
