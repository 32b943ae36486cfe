// Printing the node's answers: problem+json errors, a pod's actions and sync steps, and container states.

export interface Step {
  action: string;
  target: string;
  ok: boolean;
  error?: string;
  message?: string;
  durationMs: number;
}

export function printResult(status: number, body: Record<string, unknown>) {
  if (body["type"] && body["title"]) {
    console.log(`✗ ${status} ${body["title"]}: ${body["detail"] ?? ""}`);
    for (const e of (body["errors"] as { path: string; message: string }[] | undefined) ?? []) console.log(`    ${e.path}: ${e.message}`);
    return;
  }
  const pod = body["pod"] as { namespace: string; name: string; uid: string } | undefined;
  if (pod) console.log(`pod ${pod.namespace}/${pod.name} (${pod.uid}): ${body["ok"] === false ? "NOT OK" : "ok"} [HTTP ${status}]`);
  const a = body["actions"] as Record<string, unknown> | undefined;
  if (a) {
    const parts = [
      a["killPod"] ? "kill pod" : "",
      a["createSandbox"] ? `create sandbox (attempt ${a["attempt"]})` : "",
      ((a["initContainersToStart"] as string[] | undefined) ?? []).length ? `init ${(a["initContainersToStart"] as string[]).join(", ")}` : "",
      (a["containersToStart"] as string[]).length ? `start ${(a["containersToStart"] as string[]).join(", ")}` : "",
      (a["containersToKill"] as unknown[]).length ? `kill ${(a["containersToKill"] as { name: string }[]).map((k) => k.name).join(", ")}` : "",
    ].filter(Boolean);
    console.log(`  actions: ${parts.join("; ") || "none (converged)"}`);
  }
  for (const s of (body["steps"] as Step[] | undefined) ?? [])
    console.log(`  ${s.ok ? "✓" : "✗"} ${s.action.padEnd(16)} ${s.target.padEnd(24)} ${String(s.durationMs.toFixed(1)).padStart(8)} ms  ${s.ok ? (s.message ?? "") : `${s.error}: ${s.message ?? ""}`}`);
  const st = (body["runtime"] ?? body["status"]) as { containers?: { name: string; state: string; restartCount: number; exitCode: number; reason: string }[] } | undefined;
  for (const c of st?.containers ?? []) console.log(`  · ${c.name.padEnd(16)} ${c.state.padEnd(8)} restarts=${c.restartCount}${c.state === "exited" ? ` exit=${c.exitCode} ${c.reason}` : ""}`);
}

/** A response body to the terminal, as it comes (logs -f), with the terminal's own backpressure. */
export async function pipeBody(r: Response): Promise<void> {
  for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) if (!process.stdout.write(chunk)) await new Promise((res) => process.stdout.once("drain", res));
}

/** kubectl's column layout: columns padded to the widest cell plus three spaces, the last one not padded. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]! + 3))).join("").trimEnd()).join("\n");
}

/** The response's warnings as kubectl prints them ("Warning: ..." on stderr). */
export function printWarnings(body: Record<string, unknown>): void {
  for (const w of (body["warnings"] as string[] | undefined) ?? []) console.error(`Warning: ${w}`);
}
