// podsync pods: the node's desired pods and orphans, as kubectl get pods -A prints them.
import { fail } from "../args.js";
import type { Command } from "../command.js";
import { printResult } from "../output.js";
import type { V1Pod } from "../../status/api-status.js";

const pods: Command = {
  usage: ["pods [-o json|yaml]"],
  help: "The node's desired pods and the orphans (pods podsync made that the node no longer wants), like kubectl get pods -A.",
  examples: ["podsync pods", "podsync pods -o json"],
  options: { output: { type: "string", short: "o" } },
  async run(ctx) {
    const out = ctx.o["output"] as string | undefined;
    if (out !== undefined && out !== "json" && out !== "yaml" && out !== "wide") fail("-o must be json or yaml");
    const token = await ctx.sign({ act: "status" });
    const r = await fetch(`${ctx.url}/v1/pods`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await r.json()) as { items: V1Pod[]; orphans: V1Pod[]; metadata: { resourceVersion: string } } & Record<string, unknown>;
    if (!r.ok) {
      printResult(r.status, body);
      process.exitCode = 1;
    } else if (out === "json") console.log(JSON.stringify(body, null, 2));
    else if (out === "yaml") process.stdout.write((await import("yaml")).stringify(body));
    else {
      const { podTable } = await import("../kubectl-print.js");
      const now = Date.now();
      console.log(body.items.length ? podTable(body.items, now, { namespace: true }) : "No desired pods.");
      console.log(`\ngeneration ${body.metadata.resourceVersion}`);
      if (body.orphans.length) console.log(`\norphans (made by podsync, not in this node's desired state; only DELETE removes them):\n${podTable(body.orphans, now, { namespace: true })}`);
    }
  },
};
export default pods;
