// Waiting in e2e tests for something the node does on its own (a loop's restart, a probe's verdict): poll until
// `fn` gives a truthy value, and say what was awaited (and the last error) when it does not come in time.
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  ms = 30_000,
  everyMs = 100,
): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    const v = await fn().catch((e) => ((last = e), undefined));
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${last}` : ""}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
