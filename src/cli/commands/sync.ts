// Package cli/commands/ — one file per CLI command, each a Command listed in ../registry.ts.
// Imports the CLI's own helpers (../) and the model (pod/, settings/); never the agent's or the fronts' internals.
//
// podsync sync / plan: sign a pod (or workloads) and POST it to /v1/pods/sync (or /plan).
import { isWorkloadKind } from "../../pod/workloads/schema.js";
import { qualifiedKind } from "../workloads/ref.js";
import { usage } from "../args.js";
import type { Command } from "../command.js";
import {
  actionsLine,
  type ContainerLinesInput,
  containerLines,
  plannedPodLines,
  printWarnings,
  stepLines,
  type Step,
} from "../output.js";
import { readPod } from "../pod-files.js";
import { showProgress } from "../event-progress.js";

const sync: Command = {
  usage: ["sync [-f] FILE.(yaml|json) [--plan] [--json]", "plan [-f] FILE.(yaml|json) [--json]"],
  help: "Sign the file (a pod, and/or workloads: Deployments, StatefulSets, DaemonSets, Jobs, CronJobs, RCs, HPAs, PDBs, with their\nConfigMaps, Secrets and claims) and POST it to /v1/pods/sync: the node stores it and makes it run (the node keeps\nit running afterwards). With --plan (or as `podsync plan`), POST /v1/pods/plan: what the node would do, doing nothing.",
  examples: [
    "podsync sync examples/pod.yaml",
    "podsync sync -f examples/deployment.yaml",
    "podsync sync -f examples/statefulset.yaml   # with a claim per pod (podsync get pvc)",
    "podsync sync -f examples/daemonset.yaml",
    "podsync sync -f examples/job.yaml",
    "podsync sync -f examples/cronjob.yaml",
    "podsync plan examples/pod.yaml",
    "podsync sign examples/pod.yaml | curl ... (see podsync sign --help)",
  ],
  options: {
    plan: { type: "boolean", help: "only say what the node would do" },
    json: { type: "boolean", help: "print the node's answer as JSON" },
    filename: { type: "string", short: "f", help: "the file (- for stdin)" },
  },
  async run(ctx) {
    const file = (ctx.o["filename"] as string | undefined) ?? ctx.args[0];
    if (!file) usage(`${ctx.command} needs a pod file`, ctx.command);
    const act = ctx.command === "plan" || ctx.o["plan"] ? "plan" : "sync";
    const claims = await readPod(file);
    const token = await ctx.sign({ act, ...claims });
    // The node's events while it works (a pull, a start), for a single pod; for workloads, the node's.
    const meta = (claims.pod as { metadata?: { name?: unknown; namespace?: unknown } } | undefined)?.metadata;
    const shown =
      act === "sync"
        ? showProgress(
            ctx,
            Date.now(),
            (s) => `syncing: pulling images, starting containers (${s}s)`,
            typeof meta?.name === "string"
              ? { name: meta.name, namespace: typeof meta.namespace === "string" ? meta.namespace : "default" }
              : undefined,
          )
        : undefined;
    let body: Record<string, unknown>;
    try {
      body = await ctx.json(
        await ctx.fetch(`/v1/pods/${act}`, {
          method: "POST",
          headers: { "content-type": "application/jose" },
          body: token,
        }),
      );
    } finally {
      await shown?.stop();
    }
    if (ctx.o["json"]) console.log(JSON.stringify(body, null, 2));
    else {
      printWarnings(body);
      const pod = body["pod"] as { namespace: string; name: string; uid: string } | undefined;
      if (pod) {
        const a = actionsLine((body["actions"] as Record<string, unknown> | undefined) ?? {});
        const what =
          act === "plan"
            ? a
              ? `would ${a}`
              : "nothing to do (converged)"
            : body["ok"] === false
              ? "NOT fully synced"
              : a
                ? a
                : "unchanged (converged)";
        console.log(
          [
            `pod/${pod.name} (${pod.namespace}, uid ${pod.uid}): ${what}`,
            ...stepLines((body["steps"] as Step[] | undefined) ?? []),
            ...containerLines(body["runtime"] as ContainerLinesInput),
          ].join("\n"),
        );
      }
      for (const w of (body["workloads"] as
        | { kind: string; namespace: string; name: string; action: string }[]
        | undefined) ?? [])
        console.log(
          `${isWorkloadKind(w.kind) ? qualifiedKind(w.kind) : w.kind.toLowerCase()}/${w.name} (${w.namespace}) ${act === "plan" ? `would be ${w.action}` : w.action}`,
        );
      for (const l of plannedPodLines(body)) console.log(l);
      if (act === "sync") ctx.note(syncSummary(body));
    }
    process.exitCode = body["ok"] === false ? 1 : 0;
  },
};
export default sync;

/** The end of a sync, on stderr: its pod and workloads counted as created, changed or unchanged, and the warnings. */
export function syncSummary(body: Record<string, unknown>): string {
  const count = { created: 0, changed: 0, unchanged: 0 };
  const a = body["actions"] as Record<string, unknown> | undefined;
  if (body["pod"])
    count[!a || !actionsLine(a) ? "unchanged" : a["createSandbox"] && !a["attempt"] ? "created" : "changed"]++;
  for (const w of (body["workloads"] as { action: string }[] | undefined) ?? [])
    count[w.action === "created" ? "created" : w.action === "unchanged" ? "unchanged" : "changed"]++;
  const warned = ((body["warnings"] as string[] | undefined) ?? []).length;
  return `synced: ${count.created} created, ${count.changed} changed, ${count.unchanged} unchanged, ${warned} warning${warned === 1 ? "" : "s"}`;
}
