// podsync wait: kubectl wait for pods: --for=condition=Ready (or any condition, =false for its absence),
// --for=delete, or --for=jsonpath='{.status.phase}'=Running. Polls GET /v1/pods; progress on stderr.
import { fail, usage } from "../args.js";
import type { Command } from "../command.js";
import { jsonPath } from "../print/jsonpath.js";
import { podName } from "../pod-ref.js";
import { parseDuration, progress } from "../progress.js";
import { listPods } from "../resources/pods.js";
import { podRow } from "../print/kubectl-print.js";
import type { V1Pod } from "../../status/api-status.js";

type Want =
  | { kind: "condition"; type: string; value: string }
  | { kind: "delete" }
  | { kind: "jsonpath"; template: string; value: string };

const wait: Command = {
  usage: ["wait [pod/]NAME... --for=condition=Ready|delete|jsonpath='{...}'=VALUE [-n NS] [--timeout=30s]"],
  help: "Wait until each pod meets the condition (kubectl wait): a pod condition (Ready, Initialized, ContainersReady,\nPodScheduled; condition=Ready=false waits for it to be false), its deletion, or a jsonpath value.\nPrints pod/NAME condition met for each; exits 1 if the timeout passes first.",
  examples: [
    "podsync wait --for=condition=Ready pod/web",
    "podsync wait web --for=delete --timeout=60s",
    "podsync wait web --for=jsonpath='{.status.phase}'=Succeeded",
  ],
  options: {
    for: { type: "string", help: "condition=NAME[=true|false], delete, or jsonpath='{...}'=VALUE" },
    timeout: { type: "string", help: "how long to wait, e.g. 30s, 5m (default 30s)" },
  },
  async run(ctx) {
    const names = ctx.args.map(podName);
    if (!names.length) usage("wait needs a pod name (or uid)", ctx.command);
    const want = parseFor(ctx.o["for"] as string | undefined, ctx.command);
    const timeoutMs = ctx.o["timeout"] === undefined ? 30_000 : parseDuration(String(ctx.o["timeout"]));
    if (timeoutMs === undefined) usage("--timeout must be a duration such as 30s or 5m", ctx.command);
    const deadline = Date.now() + timeoutMs;
    const p = progress(ctx);
    const started = Date.now();
    let state = "";
    p.every(() =>
      p.update(
        `waiting for ${names.map((n) => `pod/${n}`).join(", ")} (${describe(want)}): ${state || "…"} ${Math.floor((Date.now() - started) / 1000)}s`,
      ),
    );
    const pending = new Set(names);
    let first = true;
    try {
      for (;;) {
        const l = await listPods(ctx);
        const all = [...l.items, ...l.orphans];
        const states: string[] = [];
        for (const n of [...pending]) {
          const pod =
            all.find((x) => x.metadata.namespace === ctx.namespace && x.metadata.name === n) ??
            all.find((x) => x.metadata.uid === n);
          if (!pod && want.kind !== "delete" && first) fail(`pods "${n}" not found in namespace "${ctx.namespace}"`);
          if (met(want, pod)) {
            pending.delete(n);
            p.done();
            console.log(`pod/${pod?.metadata.name ?? n} condition met`);
          } else states.push(pod ? podRow(pod, Date.now()).status : "not found");
        }
        state = states.join(", ");
        first = false;
        if (!pending.size) return;
        if (Date.now() >= deadline)
          fail(
            `timed out waiting for the condition on ${[...pending].map((n) => `pods/${n}`).join(", ")}${state ? ` (now: ${state})` : ""}`,
          );
        await new Promise((r) => setTimeout(r, Math.min(500, Math.max(0, deadline - Date.now()))));
      }
    } finally {
      p.done();
    }
  },
};
export default wait;

function parseFor(v: string | undefined, command: string): Want {
  if (v === undefined) return usage("wait needs --for (condition=Ready, delete, or jsonpath='{...}'=VALUE)", command);
  if (v === "delete") return { kind: "delete" };
  let m = /^condition=([^=]+)(?:=(.*))?$/i.exec(v);
  if (m) return { kind: "condition", type: m[1]!, value: (m[2] ?? "true").toLowerCase() };
  m = /^jsonpath=(.*)=([^=]*)$/s.exec(v);
  if (m) return { kind: "jsonpath", template: m[1]!.replace(/^'(.*)'$/s, "$1"), value: m[2]! };
  return usage(`--for must be condition=NAME[=VALUE], delete, or jsonpath='{...}'=VALUE, not "${v}"`, command);
}

function describe(w: Want): string {
  return w.kind === "delete" ? "deleted" : w.kind === "condition" ? `${w.type}=${w.value}` : `${w.template}=${w.value}`;
}

function met(w: Want, pod: V1Pod | undefined): boolean {
  if (w.kind === "delete") return pod === undefined;
  if (!pod) return false;
  if (w.kind === "jsonpath") return jsonPath(w.template, pod) === w.value;
  const c = pod.status.conditions.find((c) => c.type.toLowerCase() === w.type.toLowerCase());
  return (c?.status ?? "").toLowerCase() === w.value;
}
