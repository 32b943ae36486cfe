// podsync logs: the container's log, like kubectl logs.
import { usage } from "../args.js";
import type { Command } from "../command.js";
import { pipeBody } from "../output.js";
import { resolvePod } from "../pod-ref.js";
import { workloadKindNamed } from "../resources/index.js";
import { firstPodOf } from "../workload-pods.js";
import { resolveWorkload } from "../workload-ref.js";

const logs: Command = {
  usage: ["logs NAME|TYPE/NAME [-n NS] [-c CONTAINER] [-f] [--tail N] [--previous] [--timestamps] [--since 10s|5m|1h]"],
  help: "The container's log, like kubectl logs; -f follows it. A pod is named by its name or its uid; a workload\n(deployment/web, sts/db, job/migrate, ...) by TYPE/NAME: its first pod, as kubectl picks it (running first, then the\noldest), said on stderr when it has more than one.",
  examples: [
    "podsync logs web -f",
    "podsync logs deployment/web",
    "podsync logs web -c sidecar --tail 20",
    "podsync logs web --previous",
  ],
  options: {
    container: {
      type: "string",
      short: "c",
      help: "the container (default: the only one, or the default-container annotation's)",
    },
    follow: { type: "boolean", short: "f", help: "keep printing as the container writes" },
    tail: { type: "string", help: "only the last N lines" },
    previous: { type: "boolean", short: "p", help: "the previous (exited) instance's log" },
    timestamps: { type: "boolean", help: "each line with its RFC 3339 time" },
    since: { type: "string", help: "only lines newer than this: 30s, 5m, 2h" },
  },
  async run(ctx) {
    const [arg, extra] = ctx.args;
    const o = ctx.o;
    if (!arg) usage("logs needs a pod name (or uid)", ctx.command);
    if (extra !== undefined && o["container"] === undefined) o["container"] = extra; // kubectl logs POD CONTAINER
    const q = new URLSearchParams();
    if (o["container"]) q.set("container", String(o["container"]));
    if (o["follow"]) q.set("follow", "true");
    if (o["previous"]) q.set("previous", "true");
    if (o["timestamps"]) q.set("timestamps", "true");
    if (o["tail"] !== undefined) {
      if (!/^-?\d+$/.test(String(o["tail"]))) usage("--tail must be a whole number of lines", ctx.command);
      q.set("tailLines", String(o["tail"]));
    }
    if (o["since"] !== undefined) q.set("sinceSeconds", String(sinceSeconds(String(o["since"]), ctx.command)));
    const typed = /^([^/]+)\/(.+)$/.exec(arg);
    const kind = typed ? workloadKindNamed(typed[1]!) : undefined;
    const ref = kind
      ? await firstPodOf(ctx, await resolveWorkload(ctx, kind, typed![2]!)).then((p) => ({ uid: p.metadata.uid }))
      : await resolvePod(ctx, arg);
    const token = await ctx.sign({ act: "logs", uid: ref.uid });
    const r = await ctx.fetch(`/v1/pods/${encodeURIComponent(ref.uid)}/logs?${q}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    if (!r.ok) await ctx.json(r);
    else await pipeBody(r);
  },
};
export default logs;

/** kubectl's --since: a duration such as 30s, 5m, 2h (whole seconds). */
function sinceSeconds(v: string, command: string): number {
  const m = /^(\d+)(s|m|h)?$/.exec(v);
  if (!m) return usage("--since must be a duration such as 30s, 5m or 2h", command);
  return Math.max(1, Number(m[1]) * { s: 1, m: 60, h: 3600 }[(m[2] ?? "s") as "s"]);
}
