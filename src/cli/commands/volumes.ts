// podsync volumes: the node's persistentVolumeClaim directories; `volumes rm NAME` removes one.
import { fail } from "../args.js";
import type { Command } from "../command.js";
import { printResult, table } from "../output.js";

const volumes: Command = {
  usage: ["volumes [--json]", "volumes rm NAME"],
  help: "The node's persistentVolumeClaim directories and the pods using them; `rm` removes one (refused while a pod uses it).",
  examples: ["podsync volumes", "podsync volumes rm data"],
  options: { json: { type: "boolean" } },
  async run(ctx) {
    const [sub, name] = ctx.args;
    if (sub !== undefined && sub !== "rm") fail(`unknown volumes command "${sub}": use podsync volumes, or podsync volumes rm NAME`);
    if (sub === "rm" && !name) fail("volumes rm needs a volume name");
    const token = await ctx.sign(sub === "rm" ? { act: "delete", volume: name } : { act: "status" });
    const r = await fetch(sub === "rm" ? `${ctx.url}/v1/node/volumes/${encodeURIComponent(name!)}` : `${ctx.url}/v1/node/volumes`, { method: sub === "rm" ? "DELETE" : "GET", headers: { authorization: `Bearer ${token}` } });
    const body = (await r.json()) as Record<string, unknown>;
    if (!r.ok) {
      printResult(r.status, body);
      process.exitCode = 1;
    } else if (ctx.o["json"]) console.log(JSON.stringify(body, null, 2));
    else if (sub === "rm") console.log(`removed volume ${name}`);
    else {
      const rows = (body["volumes"] as { name: string; path: string; usedBy: { namespace: string; name: string }[] }[]).map((v) => [v.name, v.usedBy.map((p) => `${p.namespace}/${p.name}`).join(",") || "<none>", v.path]);
      console.log(table([["NAME", "USED BY", "PATH"], ...rows]));
    }
  },
};
export default volumes;
