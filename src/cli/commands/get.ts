// podsync get: one pod, as kubectl get pods shows it, or its v1.Pod.
import { fail } from "../args.js";
import type { Command } from "../command.js";
import { printResult } from "../output.js";
import type { V1Pod } from "../../status/api-status.js";

const get: Command = {
  usage: ["get UID [-o json|yaml]"],
  help: "The pod as kubectl get pods shows it (NAME READY STATUS RESTARTS AGE), or its v1.Pod.",
  examples: ["podsync get UID", "podsync get UID -o yaml"],
  options: { output: { type: "string", short: "o" } },
  async run(ctx) {
    const [uid] = ctx.args;
    if (!uid) fail("get needs a pod uid");
    const out = ctx.o["output"] as string | undefined;
    if (out !== undefined && out !== "json" && out !== "yaml" && out !== "wide") fail("-o must be json or yaml");
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
