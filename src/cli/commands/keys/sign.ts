// podsync sign: print a compact JWS carrying a pod, for callers that POST it themselves.
import { usage } from "../../args.js";
import type { Command } from "../../command.js";
import { readPod } from "../../pod-files.js";

const sign: Command = {
  usage: ["sign POD.(yaml|json) [--act sync|plan] [--aud NODE] [--ttl SECONDS]"],
  help: "Print a compact JWS carrying the pod (and the ConfigMaps and Secrets in its file), signed as sync signs it:\nthe same key lookup, and the node name from the node's /healthz unless --aud is given.",
  examples: [
    "podsync sign examples/pod.yaml > pod.jws",
    "curl -H 'content-type: application/jose' --data-binary @pod.jws http://127.0.0.1:8484/v1/pods/sync",
  ],
  options: { act: { type: "string", help: "sync (default) or plan" } },
  async run(ctx) {
    const [file] = ctx.args;
    if (!file) usage("sign needs a pod file", ctx.command);
    const act = String(ctx.o["act"] ?? "sync");
    if (act !== "sync" && act !== "plan")
      usage(`--act must be sync or plan (podsync token signs the others)`, ctx.command);
    console.log(await ctx.sign({ act, ...(await readPod(file)) }));
  },
};
export default sign;
