// Printing the node's answers: errors (once, on stderr), a pod's actions and sync steps, and tables.
import type { ServerError } from "./client.js";

export interface Step {
  action: string;
  target: string;
  ok: boolean;
  error?: string;
  message?: string;
  durationMs: number;
}

interface FieldError {
  path: string;
  message: string;
}

/** An error answer as lines: status, title and detail; with field errors, each field once. The detail is left out
 * where it repeats them all on one line (for curl users), and kept where it says more (why a kind is refused). */
export function problemLines(status: number, p: Record<string, unknown>): string[] {
  const errors = (p["errors"] as FieldError[] | undefined) ?? [];
  const title = String(p["title"] ?? `HTTP ${status}`);
  const detail = String(p["detail"] ?? "");
  if (!errors.length) return [`${status} ${title}: ${detail}`.trimEnd()];
  const repeats = detail === "" || errors.some((e) => detail.includes(e.message));
  return [`${status} ${title}:${repeats ? "" : ` ${detail}`}`, ...errors.map((e) => `    ${e.path}: ${e.message}`)];
}

export function formatServerError(e: ServerError): string {
  return [...problemLines(e.status, e.problem), ...(e.hint ? [`  (${e.hint})`] : [])].join("\n");
}

/** kubectl's column layout: columns padded to the widest cell plus three spaces, the last one not padded. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]! + 3)))
        .join("")
        .trimEnd(),
    )
    .join("\n");
}

/** What a sync did to the pod, as a line: what the actions were, or why there were none. */
export function actionsLine(a: Record<string, unknown>): string {
  const parts = [
    // kubelet kills what is left of a pod before it creates a sandbox: news only without the new sandbox.
    a["killPod"] && !a["createSandbox"] ? "kill pod" : "",
    a["createSandbox"] ? `create sandbox (attempt ${a["attempt"]})` : "",
    a["nextInitContainerToStart"] ? `init ${a["nextInitContainerToStart"]}` : "",
    ((a["containersToStart"] as string[] | undefined) ?? []).length
      ? `start ${(a["containersToStart"] as string[]).join(", ")}`
      : "",
    ((a["containersToKill"] as unknown[] | undefined) ?? []).length
      ? `kill ${(a["containersToKill"] as { name: string }[]).map((k) => k.name).join(", ")}`
      : "",
  ].filter(Boolean);
  return parts.join("; ");
}

export function stepLines(steps: readonly Step[]): string[] {
  return steps.map((s) =>
    `  ${s.ok ? "✓" : "✗"} ${s.action.padEnd(16)} ${s.target.padEnd(24)} ${String(s.durationMs.toFixed(1)).padStart(8)} ms  ${s.ok ? (s.message ?? "") : `${s.error}: ${s.message ?? ""}`}`.trimEnd(),
  );
}

/** The CRI-level status the sync, delete and status routes answer with (`runtime`, `status`). */
export type ContainerLinesInput =
  | { containers?: { name: string; state: string; restartCount: number; exitCode: number; reason: string }[] }
  | undefined;

export function containerLines(st: ContainerLinesInput): string[] {
  return (st?.containers ?? []).map(
    (c) =>
      `  · ${c.name.padEnd(16)} ${c.state.padEnd(8)} restarts=${c.restartCount}${c.state === "exited" ? ` exit=${c.exitCode} ${c.reason}` : ""}`,
  );
}

/** A response body to stdout, as it comes (logs -f), with the terminal's own backpressure. */
export async function pipeBody(r: Response): Promise<void> {
  for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>)
    if (!process.stdout.write(chunk)) await new Promise((res) => process.stdout.once("drain", res));
}

/** kubectl's NotFound, and where an object of that name is (another namespace) if anywhere. */
export function notFound(plural: string, name: string, namespace: string, elsewhere: readonly string[]): string {
  return `${plural} "${name}" not found in namespace "${namespace}"${elsewhere.length ? ` (there is one in ${elsewhere.map((n) => `"${n}"`).join(", ")}: add -n ${elsewhere[0]})` : ""}`;
}

/** The response's warnings as kubectl prints them ("Warning: ..." on stderr). */
export function printWarnings(body: Record<string, unknown>): void {
  for (const w of (body["warnings"] as string[] | undefined) ?? []) console.error(`Warning: ${w}`);
}

/** A plan's workload pods (POST /v1/pods/plan's `pods` and `refused`): one line each, as `pod/NAME would be created
 * by ReplicaSet/web-5c9f (deployment web)`. A name ending in `<random>` is a generateName the node completes. */
export function plannedPodLines(body: Record<string, unknown>): string[] {
  type Planned = {
    namespace: string;
    name: string;
    action: string;
    owner: { kind: string; name: string };
    workload: { kind: string; name: string };
  };
  const verb: Record<string, string> = { create: "would be created", delete: "would be deleted", keep: "stays" };
  const pods = ((body["pods"] as Planned[] | undefined) ?? []).map(
    (p) =>
      `  pod/${p.name} (${p.namespace}) ${verb[p.action] ?? p.action} by ${p.owner.kind}/${p.owner.name}${p.owner.name === p.workload.name ? "" : ` (${p.workload.kind.toLowerCase()} ${p.workload.name})`}`,
  );
  const refused = ((body["refused"] as { kind: string; name: string; message: string }[] | undefined) ?? []).map(
    (r) => `  ${r.kind}/${r.name} could not make a pod: ${r.message}`,
  );
  return [...pods, ...refused];
}
