// Warnings, as the Kubernetes API server sends them (k8s.io/apiserver/pkg/warning and net/http's
// NewWarningHeader): one `Warning: 299 - "<text>"` header per warning (code 299, agent "-", the text quoted with
// `"` and `\` escaped), and the same texts in the body's `warnings` array. kubectl and client-go print them.
// Every response of a request that skipped or dropped something carries them.

/** At most this many header lines, each text at most this long (the API server's limits: 4 KiB in all). */
const MAX_HEADERS = 32;
const MAX_TEXT = 512;

export function warningHeader(text: string): string {
  const t = text
    .replace(/[\r\n\t]+/g, " ")
    .replace(/[^\x20-\x7e]/g, "?")
    .slice(0, MAX_TEXT);
  return `299 - "${t.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** Append the Warning headers of `warnings` to `headers`. */
export function addWarnings(headers: Headers, warnings: readonly string[]): void {
  for (const w of warnings.slice(0, MAX_HEADERS)) headers.append("warning", warningHeader(w));
  if (warnings.length > MAX_HEADERS)
    headers.append("warning", warningHeader(`${warnings.length - MAX_HEADERS} more warning(s) in the body`));
}

/** A JSON response carrying `warnings` in its body (when there are any) and as Warning headers. */
export function jsonWithWarnings(body: Record<string, unknown>, status: number, warnings: readonly string[]): Response {
  const headers = new Headers({ "content-type": "application/json" });
  addWarnings(headers, warnings);
  return new Response(JSON.stringify(warnings.length ? { ...body, warnings } : body), { status, headers });
}
