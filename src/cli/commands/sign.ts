// podsync sign: print a compact JWS carrying a pod, for callers that POST it themselves.
import { fail } from "../args.js";
import type { Command } from "../command.js";
import { loadKey, signToken } from "../keys.js";
import { readPod } from "../pod-files.js";

const sign: Command = {
  usage: ["sign POD.(yaml|json) --key KEY.json --aud NODE [--act sync|plan] [--ttl SECONDS]"],
  help: "Print a compact JWS carrying the pod (and the ConfigMaps and Secrets in its file).",
  examples: ["podsync sign pod.yaml --key key.json --aud node-1 > pod.jws"],
  options: { act: { type: "string" } },
  async run(ctx) {
    const [file] = ctx.args;
    if (!file) fail("sign needs a pod file");
    const aud = ctx.o["aud"] as string | undefined;
    if (!aud) fail("sign needs --aud NODE");
    const act = String(ctx.o["act"] ?? "sync");
    console.log(await signToken(loadKey(ctx.keyPath), { act, ...(await readPod(file)) }, aud, ctx.ttl, ctx.iss));
  },
};
export default sign;
