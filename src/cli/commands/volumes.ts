// podsync volumes: the node's persistentVolumeClaim directories; `volumes rm NAME` removes one.
import { usage } from "../args.js";
import type { Command } from "../command.js";
import { table } from "../output.js";

const volumes: Command = {
  usage: ["volumes [--json]", "volumes rm NAME [-n NAMESPACE]"],
  help: "The node's persistentVolumeClaim directories and the pods using them; `rm` removes one (refused while a pod uses it).",
  examples: ["podsync volumes", "podsync volumes rm data"],
  options: { json: { type: "boolean", help: "the node's answer as JSON" } },
  async run(ctx) {
    const [sub, name] = ctx.args;
    if (sub !== undefined && sub !== "rm")
      usage(`unknown volumes command "${sub}": use podsync volumes, or podsync volumes rm NAME`, ctx.command);
    if (sub === "rm" && !name) usage("volumes rm needs a volume name", ctx.command);
    if (sub === "rm") {
      // Claims are namespaced (<root>/volumes/pvc/<namespace>/<claim>): the namespace is the query's and the token's.
      const ns = String(ctx.o["namespace"] ?? "default");
      await ctx.call("DELETE", `/v1/node/volumes/${encodeURIComponent(name!)}?namespace=${encodeURIComponent(ns)}`, {
        act: "delete",
        volume: name,
        namespace: ns,
      });
      console.log(`removed volume ${ns}/${name}`);
      return;
    }
    const body = await ctx.call("GET", "/v1/node/volumes", { act: "status" });
    if (ctx.o["json"]) console.log(JSON.stringify(body, null, 2));
    else {
      const rows = (
        body["volumes"] as {
          namespace: string;
          name: string;
          path: string;
          usedBy: { namespace: string; name: string }[];
        }[]
      ).map((v) => [
        v.namespace,
        v.name,
        v.usedBy.map((p) => `${p.namespace}/${p.name}`).join(",") || "<none>",
        v.path,
      ]);
      console.log(table([["NAMESPACE", "NAME", "USED BY", "PATH"], ...rows]));
    }
  },
};
export default volumes;
