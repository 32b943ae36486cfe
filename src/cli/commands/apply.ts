// podsync apply: make a file's pods the node's whole desired set (PUT /v1/node/pods), as kubectl apply --prune
// would: each pod is named created, configured, unchanged or deleted, judged against the node's set before the
// apply (so a new pod the loop started first still reads created).
//   --generation auto (the default): the node's generation (GET /v1/pods' resourceVersion) + 1. A concurrent
//   apply that moves the generation first makes this one a 409 (nothing changed): run it again.
//   --dry-run: the same judgement plus, per pod, what the node would do (POST /v1/pods/plan), and for the file's
//   workloads the pods their controllers would make and delete (one plan of them all); nothing changes.
//   An apply that leaves the node with no pods (while it has some), or that deletes a workload the file leaves out
//   (with its pods), needs --prune-all (src/cli/workloads/prune.ts); --dry-run names every such deletion.
import { fail, usage } from "../args.js";
import type { Ctx } from "../client.js";
import type { Command } from "../command.js";
import { actionsLine, plannedPodLines, printWarnings, problemLines, stepLines, type Step } from "../output.js";
import { controllerOf } from "../../controllers/pods.js";
import { readBytes, readPods } from "../pod-files.js";
import { showProgress } from "../event-progress.js";
import { listPods } from "../resources/pods.js";
import type { V1Pod } from "../../status/api-status.js";
import { validatePod } from "../../pod/validate.js";
import { canonicalJSON } from "../../util/canonical-json.js";
import { fileKeys, prunedWorkloads, workloadRef, type ListedWorkload, type Pruned } from "../workloads/prune.js";

type Change = "created" | "configured" | "unchanged" | "deleted";
interface PodMeta {
  namespace?: string;
  name?: string;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const apply: Command = {
  usage: [
    "apply -f NODE.(yaml|json) [--generation auto|N] [--dry-run] [--prune-all] [--detached] [--json]",
    "apply NODE.(yaml|json) ...",
  ],
  help: `Make the file's pods (YAML documents, or a v1.List; with their ConfigMaps and Secrets) the node's whole desired
set: PUT /v1/node/pods. Pods the node held that the file leaves out are deleted. Prints each pod as created,
configured, unchanged or deleted.
The generation orders sets: --generation auto (the default) is the node's generation + 1, read just before the
PUT; a set the node is already past is refused (409) with nothing changed.`,
  examples: [
    "podsync apply -f examples/pod.yaml --dry-run",
    "podsync apply -f examples/pod.yaml",
    "podsync apply -f examples/empty.yaml --prune-all   # remove every pod and workload",
  ],
  options: {
    filename: { type: "string", short: "f", help: "the file of pods (- for stdin)" },
    generation: { type: "string", help: "auto (default: the node's + 1) or a whole number above the node's" },
    "dry-run": {
      type: "boolean",
      help: "say what would change, and each pod's actions (the plan route); change nothing",
    },
    "prune-all": { type: "boolean", help: "allow a set that removes every pod from the node" },
    detached: { type: "boolean", help: "send the file's bytes as they are, signing their digest" },
    json: { type: "boolean", help: "print the node's answer as JSON" },
  },
  async run(ctx) {
    const input = await readInput(ctx);
    const plan = await judgeApply(ctx, input);
    if (ctx.o["dry-run"]) return dryRun(ctx, input.items, input.pods, plan);
    if (plan.pruned.length && !ctx.o["prune-all"])
      fail(
        `${input.file} leaves out ${plan.pruned.map((p) => workloadRef(p.workload)).join(", ")}: applying it would delete ${plan.pruned.length === 1 ? "that workload" : "those workloads"} and ${plan.pruned.reduce((n, p) => n + p.pods.length, 0)} pods of theirs (kubectl apply deletes only with --prune); add --prune-all if that is what you want, or see them with --dry-run`,
      );
    const body = await send(ctx, input, plan.generation);
    printWarnings(body);
    if (ctx.o["json"]) console.log(JSON.stringify(body, null, 2));
    else printResult(ctx, body, plan);
    process.exitCode = body["ok"] === false ? 1 : 0;
  },
};
export default apply;

interface Input {
  file: string;
  /** --generation N, or undefined for auto. */
  fixed: number | undefined;
  bytes: Buffer<ArrayBuffer>;
  json: boolean;
  /** The file's objects; `pods` without its ConfigMaps and Secrets (pods and workloads). */
  items: unknown[];
  pods: unknown[];
}

const kindOf = (x: unknown) => (x as { kind?: unknown }).kind;

/** The flags checked and the file read. */
async function readInput(ctx: Ctx): Promise<Input> {
  const file = (ctx.o["filename"] as string | undefined) ?? ctx.args[0];
  if (!file)
    usage("apply needs a file of pods: podsync apply -f FILE (YAML documents, or a JSON v1.List)", ctx.command);
  const g = String(ctx.o["generation"] ?? "auto");
  const fixed = g === "auto" ? undefined : Number(g);
  if (fixed !== undefined && !(Number.isSafeInteger(fixed) && fixed >= 1))
    usage(`--generation must be auto or a whole number from 1, not "${g}"`, ctx.command);
  const bytes = readBytes(file);
  const json = file.endsWith(".json");
  const items = (await readPods(file, bytes.toString("utf8"), json)).filter((x) => x !== null && x !== undefined);
  const pods = items.filter((x) => kindOf(x) !== "ConfigMap" && kindOf(x) !== "Secret");
  return { file, fixed, bytes, json, items, pods };
}

/** The file judged against the node's set before the apply; an apply that would empty the node is refused here. */
async function judgeApply(ctx: Ctx, input: Input): Promise<Plan> {
  const [before, stored] = await Promise.all([listPods(ctx), listWorkloads(ctx)]);
  const changes = judge(
    before.items,
    input.pods.filter((x) => kindOf(x) === "Pod" || kindOf(x) === undefined),
  );
  const pruned = prunedWorkloads(stored.items, before.items, fileKeys(input.pods));
  if (before.items.length && !input.pods.length && !ctx.o["prune-all"])
    fail(
      `${input.file} holds no pods: applying it would remove all ${before.items.length} pods from the node (${before.items.map(ref).join(", ")}); add --prune-all if that is what you want`,
    );
  const generation = input.fixed ?? Number(before.metadata.resourceVersion) + 1;
  return { changes, pruned, current: before.items, generation };
}

/** The PUT, signed (or detached), with the pods' progress on stderr while it runs; the node's answer. */
async function send(ctx: Ctx, input: Input, generation: number): Promise<Record<string, unknown>> {
  const shown = showProgress(
    ctx,
    Date.now(),
    (s) =>
      `applying generation ${generation}: removed pods stop within their grace period; new ones pull and start (${s}s)`,
  );
  let r: Response;
  try {
    if (ctx.o["detached"]) {
      // The file's bytes go as they are; the token signs their digest.
      const digest = Buffer.from(await crypto.subtle.digest("SHA-256", input.bytes)).toString("base64url");
      const token = await ctx.sign({ act: "apply", generation, body_sha256: digest });
      r = await ctx.fetch("/v1/node/pods", {
        method: "PUT",
        headers: {
          "content-type": input.json ? "application/json" : "application/yaml",
          "podsync-signature": token,
        },
        body: input.bytes,
      });
    } else {
      const token = await ctx.sign({ act: "apply", generation, pods: input.items });
      r = await ctx.fetch("/v1/node/pods", {
        method: "PUT",
        headers: { "content-type": "application/jose" },
        body: token,
      });
    }
  } finally {
    await shown.stop();
  }
  if (r.status === 409 && input.fixed === undefined) {
    const body = (await r
      .clone()
      .json()
      .catch(() => ({}))) as Record<string, unknown>;
    if (String(body["type"]).endsWith(":stale-generation"))
      fail(
        `the node's generation moved past ${generation - 1} while this apply was signed (another apply?); nothing changed: run it again`,
      );
  }
  return ctx.json(r);
}

type PodResult = {
  ok: boolean;
  pod: { namespace: string; name: string; uid: string };
  actions?: Record<string, unknown>;
  steps: Step[];
  status?: unknown;
  error?: Record<string, unknown>;
  superseded?: string;
};

/** Each object of the answer as created, configured, unchanged or deleted (stdout), what went wrong, and the
 * summary with the node's generation (stderr). */
function printResult(ctx: Ctx, body: Record<string, unknown>, plan: Plan): void {
  const lines: string[] = [];
  const problems: string[] = [];
  const count: Record<Change, number> = { created: 0, configured: 0, unchanged: 0, deleted: 0 };
  // The workloads first, as kubectl prints the file's objects: counted with the file's pods.
  for (const w of (body["workloads"] as { kind: string; name: string; action: string }[] | undefined) ?? []) {
    const c: Change = w.action === "updated" ? "configured" : w.action === "created" ? "created" : "unchanged";
    count[c]++;
    lines.push(`${w.kind.toLowerCase()}/${w.name} ${c}`);
  }
  for (const w of (body["removedWorkloads"] as { kind: string; name: string }[] | undefined) ?? []) {
    count.deleted++;
    lines.push(`${w.kind.toLowerCase()}/${w.name} deleted`);
  }
  const owned = new Set(plan.current.filter((p) => controllerOf(p.metadata)).map((p) => p.metadata.uid));
  for (const pr of body["pods"] as PodResult[]) {
    let c = changeOf(plan.changes, pr.pod);
    // A pod the node had, with the same spec, that this PUT still had to act on (it had stopped, say) is
    // named by what was done.
    if (c === "unchanged" && pr.actions && actionsLine(pr.actions)) c = "configured";
    count[c]++;
    lines.push(`pod/${pr.pod.name} ${c}${pr.superseded ? ` (${pr.superseded})` : ""}`);
    if (!pr.ok) problems.push(...problemOf(pr, "is stored but not running as asked"));
  }
  for (const pr of body["removed"] as PodResult[]) {
    // A pod a controller made goes with its workload (counted there), as a cluster's garbage collector takes it.
    const mine = !owned.has(pr.pod.uid);
    if (mine) count.deleted++;
    lines.push(
      `pod/${pr.pod.name} deleted${mine ? "" : " (with its workload)"}${pr.superseded ? ` (${pr.superseded})` : ""}`,
    );
    if (!pr.ok) problems.push(...problemOf(pr, "left the desired state but was not fully removed"));
  }
  if (lines.length) console.log(lines.join("\n"));
  const warned = ((body["warnings"] as string[] | undefined) ?? []).length;
  ctx.note(
    `generation ${body["generation"]}: ${Object.entries(count)
      .map(([k, v]) => `${v} ${k}`)
      .join(", ")}, ${warned} warning${warned === 1 ? "" : "s"}`,
  );
  if (problems.length) process.stderr.write(`${problems.join("\n")}\n`);
}

const problemOf = (pr: PodResult, what: string) => [
  `pod/${pr.pod.name} (${pr.pod.namespace}) ${what}:`,
  ...(pr.error ? problemLines(Number(pr.error["status"]), pr.error).map((l) => `  ${l}`) : []),
  ...stepLines(pr.steps.filter((s) => !s.ok)),
];

/** The node's workloads (GET /v1/workloads); none where the deployment runs no workloads (the route is absent). */
async function listWorkloads(ctx: Ctx): Promise<{ items: ListedWorkload[] }> {
  const r = await ctx.fetch("/v1/workloads", {
    headers: { authorization: `Bearer ${await ctx.sign({ act: "status" })}` },
  });
  return r.status === 404 ? { items: [] } : ctx.json<{ items: ListedWorkload[] }>(r);
}

const ref = (p: V1Pod) => `${p.metadata.namespace}/${p.metadata.name}`;

/** Each of the file's pods (by uid) as created, configured or unchanged against the node's set, and each pod of
 * the set the file leaves out as deleted. Specs are compared after the node's own defaulting (validatePod), so
 * a field left at its default is no change. */
function judge(current: V1Pod[], pods: unknown[]): Map<string, Change> {
  const out = new Map<string, Change>();
  const byUid = new Map(current.map((p) => [p.metadata.uid, p]));
  // A pod sent without a uid is the node's pod of that namespace and name (the node derives its uid from them:
  // src/pod/workloads/uid.ts), so it is judged, and kept from the deleted ones, by namespace/name.
  const byName = new Map(current.map((p) => [nameKey(p.metadata), p]));
  const names = new Set<string>();
  for (const input of pods) {
    const m = ((input as { metadata?: PodMeta }).metadata ?? {}) as PodMeta;
    const had = m.uid ? byUid.get(m.uid) : byName.get(nameKey(m));
    if (!m.uid) names.add(nameKey(m));
    out.set(m.uid ?? nameKey(m), !had ? "created" : same(had, input) ? "unchanged" : "configured");
  }
  const uids = new Set(pods.map((x) => (x as { metadata?: PodMeta }).metadata?.uid));
  for (const p of current)
    if (!uids.has(p.metadata.uid) && !names.has(nameKey(p.metadata)) && !controllerOf(p.metadata))
      out.set(p.metadata.uid, "deleted");
  return out;
}

const nameKey = (m: PodMeta) => `${m.namespace ?? "default"}/${m.name ?? ""}`;

/** A pod of the file as judged: by its uid, or by namespace/name when it was sent without one. */
function changeOf(changes: Map<string, Change>, pod: { namespace: string; name: string; uid: string }): Change {
  const c = changes.get(pod.uid) ?? changes.get(nameKey(pod)) ?? "configured";
  return c === "deleted" ? "configured" : c;
}

function same(had: V1Pod, input: unknown): boolean {
  let pod: { metadata: PodMeta; spec: Record<string, unknown> };
  // A pod sent without a uid takes the node's pod's (derived from its namespace and name), as the node gives it.
  const m = (input as { metadata?: PodMeta }).metadata;
  const withUid = m && !m.uid ? { ...(input as object), metadata: { ...m, uid: had.metadata.uid } } : input;
  try {
    pod = validatePod(withUid) as unknown as typeof pod;
  } catch {
    return false; // the node will say what is wrong with it
  }
  const strip = (spec: Record<string, unknown> | undefined) => canonicalJSON({ ...spec, imagePullSecrets: undefined });
  return (
    had.metadata.name === pod.metadata.name &&
    had.metadata.namespace === pod.metadata.namespace &&
    canonicalJSON(had.metadata.labels ?? {}) === canonicalJSON(pod.metadata.labels ?? {}) &&
    canonicalJSON(had.metadata.annotations ?? {}) === canonicalJSON(pod.metadata.annotations ?? {}) &&
    strip(had.spec as unknown as Record<string, unknown>) === strip(pod.spec)
  );
}

interface Plan {
  changes: Map<string, Change>;
  pruned: Pruned[];
  current: V1Pod[];
  generation: number;
}

/** --dry-run: every object the apply would create, change or delete (the file's pods with the plan route's actions,
 * the workloads with the pods their controllers would make and delete, the pods and the workloads the file leaves
 * out with all they made), with every warning the node gave; as JSON with --json. */
async function dryRun(ctx: Ctx, items: unknown[], pods: unknown[], plan: Plan): Promise<void> {
  const kindOf = (x: unknown) => (x as { kind?: unknown }).kind;
  const objects = (kind: string, ns: string | undefined) =>
    items.filter(
      (x) => kindOf(x) === kind && [undefined, ns].includes((x as { metadata?: PodMeta }).metadata?.namespace),
    );
  const planned = async (claims: Record<string, unknown>) => {
    const r = await ctx.fetch("/v1/pods/plan", {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: await ctx.sign({ act: "plan", ...claims }),
    });
    const body = (await r.json()) as Record<string, unknown>;
    for (const w of (body["warnings"] as string[] | undefined) ?? []) warnings.add(w);
    return { r, body };
  };
  const warnings = new Set<string>();
  const lines: string[] = [];
  let failed = false;
  const out = {
    dryRun: true,
    generation: plan.generation,
    pods: [] as Record<string, unknown>[],
    workloads: [] as Record<string, unknown>[],
    workloadPods: [] as unknown[],
    refused: [] as unknown[],
    deleted: { pods: [] as Record<string, unknown>[], workloads: [] as Record<string, unknown>[] },
    needsPruneAll: plan.pruned.length > 0 && !ctx.o["prune-all"],
    warnings: [] as string[],
  };
  const workloads = pods.filter((x) => kindOf(x) !== "Pod" && kindOf(x) !== undefined);
  for (const pod of pods.filter((x) => !workloads.includes(x))) {
    const m = ((pod as { metadata?: PodMeta }).metadata ?? {}) as PodMeta;
    const ns = m.namespace ?? "default";
    const cms = objects("ConfigMap", ns);
    const secrets = objects("Secret", ns);
    const { r, body } = await planned({
      pod,
      ...(cms.length ? { configMaps: cms } : {}),
      ...(secrets.length ? { secrets } : {}),
    });
    const change = changeOf(plan.changes, { namespace: ns, name: m.name ?? "", uid: m.uid ?? "" });
    const ref = { namespace: ns, name: m.name, ...(m.uid ? { uid: m.uid } : {}), change };
    if (!r.ok) {
      failed = true;
      out.pods.push({ ...ref, refused: body });
      lines.push(`pod/${m.name} ${change} (dry run): refused:`, ...problemLines(r.status, body).map((l) => `  ${l}`));
      continue;
    }
    const a = actionsLine((body["actions"] as Record<string, unknown> | undefined) ?? {});
    out.pods.push({ ...ref, actions: body["actions"] ?? {} });
    lines.push(`pod/${m.name} ${change} (dry run)${a ? `: would ${a}` : ""}`);
  }
  for (const p of plan.current)
    if (plan.changes.get(p.metadata.uid) === "deleted") {
      out.deleted.pods.push({ namespace: p.metadata.namespace, name: p.metadata.name, uid: p.metadata.uid });
      lines.push(`pod/${p.metadata.name} deleted (dry run)`);
    }
  if (workloads.length) {
    // The workloads in one plan, with the file's ConfigMaps and Secrets: each created, updated or unchanged, and
    // the pods their controllers would make and delete (named as they would name them).
    const objs = items.filter((x) => kindOf(x) === "ConfigMap" || kindOf(x) === "Secret");
    const { r, body } = await planned({ items: [...workloads, ...objs] });
    if (!r.ok) {
      failed = true;
      out.refused.push(body);
      lines.push(`workloads (dry run): refused:`, ...problemLines(r.status, body).map((l) => `  ${l}`));
    } else {
      for (const w of (body["workloads"] as
        | { kind: string; name: string; namespace: string; action: string }[]
        | undefined) ?? []) {
        const change = w.action === "updated" ? "configured" : w.action;
        out.workloads.push({ kind: w.kind, namespace: w.namespace, name: w.name, change });
        lines.push(`${w.kind.toLowerCase()}/${w.name} ${change} (dry run)`);
      }
      out.workloadPods.push(...((body["pods"] as unknown[] | undefined) ?? []));
      out.refused.push(...((body["refused"] as unknown[] | undefined) ?? []));
      lines.push(...plannedPodLines(body));
    }
  }
  // The workloads the file leaves out, with what their controllers made: all deleted by the PUT.
  for (const p of plan.pruned) {
    const w = p.workload;
    const name = `${w.kind.toLowerCase()}/${w.metadata.name}`;
    out.deleted.workloads.push({
      kind: w.kind,
      namespace: w.metadata.namespace,
      name: w.metadata.name,
      uid: w.metadata.uid,
      workloads: p.workloads.map((d) => ({ kind: d.kind, name: d.metadata.name, uid: d.metadata.uid })),
      pods: p.pods.map((x) => ({ name: x.metadata.name, uid: x.metadata.uid })),
    });
    lines.push(`${name} deleted (dry run)`);
    for (const d of p.workloads)
      lines.push(`  ${d.kind.toLowerCase()}/${d.metadata.name} would be deleted with ${name}`);
    for (const x of p.pods)
      lines.push(`  pod/${x.metadata.name} (${x.metadata.namespace}) would be deleted with ${name}`);
  }
  out.warnings = [...warnings];
  if (ctx.o["json"]) {
    console.log(JSON.stringify(out, null, 2));
    process.exitCode = failed ? 1 : 0;
    return;
  }
  for (const w of warnings) console.error(`Warning: ${w}`);
  if (lines.length) console.log(lines.join("\n"));
  if (out.needsPruneAll)
    ctx.note(
      `the apply would be refused: it deletes ${plan.pruned.map((p) => workloadRef(p.workload)).join(", ")}, which the file leaves out; add --prune-all to allow it`,
    );
  ctx.note(`generation ${plan.generation} would be applied; nothing changed`);
  process.exitCode = failed ? 1 : 0;
}
