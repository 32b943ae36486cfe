// podsync status / delete: the pod's runtime status, or delete it (GET /v1/pods/{uid}/status, DELETE /v1/pods/{uid}).
import { fail } from "../args.js";
import type { Command } from "../command.js";
import { printResult } from "../output.js";

const status: Command = {
  usage: ["status UID [--json]", "delete UID [--json]"],
  help: "status: the pod's sandbox and containers as the runtime reports them.\ndelete: stop and remove the pod, and forget it (the node stops keeping it running).",
  examples: ["podsync status UID", "podsync delete UID"],
  options: { json: { type: "boolean" } },
  async run(ctx) {
    const cmd = ctx.command;
    const [uid] = ctx.args;
    if (!uid) fail(`${cmd} needs a pod uid`);
    const token = await ctx.sign({ act: cmd, uid });
    const r = await fetch(cmd === "status" ? `${ctx.url}/v1/pods/${encodeURIComponent(uid)}/status` : `${ctx.url}/v1/pods/${encodeURIComponent(uid)}`, {
      method: cmd === "status" ? "GET" : "DELETE",
      headers: { authorization: `Bearer ${token}` },
    });
    const body = (await r.json()) as Record<string, unknown>;
    if (ctx.o["json"]) console.log(JSON.stringify(body, null, 2));
    else printResult(r.status, body);
    process.exitCode = r.ok && body["ok"] !== false ? 0 : 1;
  },
};
export default status;
