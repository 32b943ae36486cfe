// podsync logs: the container's log, like kubectl logs.
import { fail } from "../args.js";
import type { Command } from "../command.js";
import { pipeBody, printResult } from "../output.js";

const logs: Command = {
  usage: ["logs UID [-c NAME] [-f] [--tail N] [--previous] [--timestamps] [--since 10s|5m|1h]"],
  help: "The container's log, like kubectl logs; -f follows it.",
  examples: ["podsync logs UID -f", "podsync logs UID -c sidecar --tail 20"],
  options: {
    container: { type: "string", short: "c" },
    follow: { type: "boolean", short: "f" },
    tail: { type: "string" },
    previous: { type: "boolean", short: "p" },
    timestamps: { type: "boolean" },
    since: { type: "string" },
  },
  async run(ctx) {
    const [uid] = ctx.args;
    const o = ctx.o;
    if (!uid) fail("logs needs a pod uid");
    const q = new URLSearchParams();
    if (o["container"]) q.set("container", String(o["container"]));
    if (o["follow"]) q.set("follow", "true");
    if (o["previous"]) q.set("previous", "true");
    if (o["timestamps"]) q.set("timestamps", "true");
    if (o["tail"] !== undefined) q.set("tailLines", String(o["tail"]));
    if (o["since"] !== undefined) q.set("sinceSeconds", String(sinceSeconds(String(o["since"]))));
    const token = await ctx.sign({ act: "logs", uid });
    const r = await fetch(`${ctx.url}/v1/pods/${encodeURIComponent(uid)}/logs?${q}`, { headers: { authorization: `Bearer ${token}` } });
    if (!r.ok) {
      printResult(r.status, (await r.json()) as Record<string, unknown>);
      process.exitCode = 1;
      return;
    }
    await pipeBody(r);
  },
};
export default logs;

/** kubectl's --since: a duration such as 30s, 5m, 2h (whole seconds). */
function sinceSeconds(v: string): number {
  const m = /^(\d+)(s|m|h)?$/.exec(v);
  if (!m) return fail("--since must be a duration such as 30s, 5m or 2h");
  return Math.max(1, Number(m[1]) * { s: 1, m: 60, h: 3600 }[(m[2] ?? "s") as "s"]);
}
