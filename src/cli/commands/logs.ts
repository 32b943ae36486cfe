// podsync logs: the container's log, like kubectl logs.
import { usage } from "../args.js";
import type { Command } from "../command.js";
import { pipeBody } from "../output.js";
import type { V1Pod } from "../../status/api-status.js";
import { resolvePod } from "../pod-ref.js";
import { workloadKindNamed } from "../resources/index.js";
import { firstPodOf } from "../workloads/pods.js";
import { resolveWorkload } from "../workloads/ref.js";

const logs: Command = {
  usage: [
    "logs NAME|TYPE/NAME [-n NS] [-c CONTAINER | --all-containers] [--prefix] [-f] [--tail N] [--previous] [--timestamps] [--since 10s|5m|1h]",
  ],
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
    "all-containers": { type: "boolean", help: "every container's log (init containers first), one after another" },
    prefix: { type: "boolean", help: "each line prefixed [pod/NAME/CONTAINER], as kubectl --prefix" },
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
    if (o["all-containers"] && o["container"] !== undefined)
      usage("--all-containers=true should not be specified with a container name (-c)", ctx.command);
    const pod = kind
      ? await firstPodOf(ctx, await resolveWorkload(ctx, kind, typed![2]!))
      : (await resolvePod(ctx, arg)).pod;
    const uid = pod.metadata.uid;
    const names = o["all-containers"]
      ? [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].map((c) => c.name)
      : [o["container"] ? String(o["container"]) : undefined];
    // kubectl --all-containers -f follows them all at once; without -f, one after another.
    const one = async (container: string | undefined) => {
      const cq = new URLSearchParams(q);
      if (container) cq.set("container", container);
      const token = await ctx.sign({ act: "logs", uid });
      const r = await ctx.fetch(`/v1/pods/${encodeURIComponent(uid)}/logs?${cq}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      if (!r.ok) await ctx.json(r);
      else if (o["prefix"]) await prefixedBody(r, `[pod/${pod.metadata.name}/${container ?? onlyContainer(pod)}] `);
      else await pipeBody(r);
    };
    if (o["follow"]) await Promise.all(names.map(one));
    else for (const c of names) await one(c);
  },
};
export default logs;

/** The container a log without -c is of: the default-container annotation's, else the first. */
function onlyContainer(pod: V1Pod): string {
  return pod.metadata.annotations?.["kubectl.kubernetes.io/default-container"] ?? pod.spec?.containers[0]?.name ?? "";
}

/** The body, line by line, each line after `prefix` (kubectl's --prefix). */
async function prefixedBody(r: Response, prefix: string): Promise<void> {
  let rest = "";
  const dec = new TextDecoder();
  const out = async (s: string) => {
    if (!process.stdout.write(s)) await new Promise((res) => process.stdout.once("drain", res));
  };
  for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
    const lines = (rest + dec.decode(chunk, { stream: true })).split("\n");
    rest = lines.pop() ?? "";
    if (lines.length) await out(lines.map((l) => `${prefix}${l}\n`).join(""));
  }
  if (rest) await out(`${prefix}${rest}\n`);
}

/** kubectl's --since: a duration such as 30s, 5m, 2h (whole seconds). */
function sinceSeconds(v: string, command: string): number {
  const m = /^(\d+)(s|m|h)?$/.exec(v);
  if (!m) return usage("--since must be a duration such as 30s, 5m or 2h", command);
  return Math.max(1, Number(m[1]) * { s: 1, m: 60, h: 3600 }[(m[2] ?? "s") as "s"]);
}
