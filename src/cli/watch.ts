// A watch over the node's Kubernetes API (src/kubeapi/), as client-go's reflector runs one: newline-delimited
// watch events from `PATH?watch=1`, resumed from the last resourceVersion when the server ends the stream (its
// timeout), and started again from "now, with the current objects first" after 410 Gone. It costs the node no
// runtime call (the watch is fed by the loop's relist), where polling the list cost one request a second.
import { READ_ACT } from "../auth/read-token.js";
import type { Ctx } from "./client.js";
import type { KubeObject } from "./resources/resource.js";

export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: KubeObject & { metadata: KubeObject["metadata"] & { resourceVersion?: string } };
}

/** The node serves no watch for the path (404: an older podsync, or a Workers node without the Kubernetes paths),
 * or refuses the read scope: the caller polls instead. */
export class WatchUnavailable extends Error {}

/** Calls `on` for each event until `signal` aborts. Throws WatchUnavailable when the first request is refused. */
export async function watchEvents(
  ctx: Ctx,
  path: string,
  on: (e: WatchEvent) => void | Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  let rv = "";
  let first = true;
  while (!signal?.aborted) {
    // A read token per connection: it is checked when the watch starts, and reusable for its lifetime.
    const token = await ctx.sign({ act: READ_ACT });
    const q = `watch=1&allowWatchBookmarks=true${rv ? `&resourceVersion=${encodeURIComponent(rv)}` : ""}`;
    let r: Response;
    try {
      r = await ctx.fetch(`${path}${path.includes("?") ? "&" : "?"}${q}`, {
        headers: { authorization: `Bearer ${token}`, accept: "application/json" },
        ...(signal ? { signal } : {}),
      });
    } catch (e) {
      if (signal?.aborted) return;
      throw e;
    }
    if (r.status === 410) {
      // Expired: the history no longer holds rv. Start from now; the current objects come first again.
      await r.body?.cancel();
      rv = "";
      continue;
    }
    if (!r.ok || !r.body) {
      await r.body?.cancel();
      if (first) throw new WatchUnavailable(`the node answered ${r.status} to a watch of ${path}`);
      // A watch that worked once and now fails: say it through the list's own error path.
      await ctx.json(r);
      return;
    }
    first = false;
    const opened = Date.now();
    let buf = "";
    const decoder = new TextDecoder();
    try {
      for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line) continue;
          const e = JSON.parse(line) as WatchEvent;
          if (e.type === "ERROR") {
            // A Status in the stream: 410 is "relist", anything else ends the watch with its message.
            const code = (e.object as unknown as { code?: number }).code;
            if (code === 410) {
              rv = "";
              break;
            }
            throw new Error(
              String((e.object as unknown as { message?: string }).message ?? "the watch ended with an error"),
            );
          }
          rv = e.object.metadata.resourceVersion ?? rv;
          if (e.type !== "BOOKMARK") await on(e);
        }
      }
    } catch (e) {
      if (signal?.aborted) return;
      // The stream was cut (the server restarted, the connection dropped): resume from rv.
      if (!(e instanceof TypeError) && !(e as { code?: string }).code) throw e;
    }
    // The server ends a watch at its timeout (minutes); one that ends at once, again and again, is not hammered.
    if (Date.now() - opened < 1000) await new Promise((res) => setTimeout(res, 1000));
  }
}
