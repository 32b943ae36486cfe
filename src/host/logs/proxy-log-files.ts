// Container log files read through the node's cri-proxy (the Workers entry): the proxy's log endpoint
// serves stat and bounded range reads of files under the node's pod log directory. Unlike the Node
// handle, this one cannot drain a file after it was rotated away (the proxy answers 409 for it): a follow
// that meets a rotation goes on with the new file and may miss the old one's last bytes.
import type { LogFiles, LogHandle } from "../../logs/log-files.js";

export interface ProxyLogOptions {
  /** The proxy's gRPC-Web base URL (the same one the CRI transport uses). */
  baseUrl: string;
  token?: string | undefined;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

const PREFIX = "/podsync/v1/logs/";

export function proxyLogFiles(o: ProxyLogOptions): LogFiles {
  const f = o.fetch ?? fetch;
  const headers: Record<string, string> = o.token ? { authorization: `Bearer ${o.token}` } : {};
  const call = (op: "stat" | "read", params: Record<string, string>) =>
    f(`${o.baseUrl.replace(/\/$/, "")}${PREFIX}${op}?${new URLSearchParams(params)}`, {
      headers,
      signal: AbortSignal.timeout(o.timeoutMs ?? 10_000),
    });
  const statOf = async (path: string): Promise<{ id: string; size: number } | undefined> => {
    const r = await call("stat", { path });
    if (r.status === 404) return undefined;
    if (r.status === 501)
      throw new Error(
        `the node's cri-proxy: ${String(((await r.json().catch(() => ({}))) as { error?: unknown }).error ?? "cri-proxy serves no logs")}`,
      );
    if (!r.ok) throw new Error(`cri-proxy log stat answered ${r.status}`);
    return (await r.json()) as { id: string; size: number };
  };
  return {
    async open(path) {
      const first = await statOf(path);
      if (!first) return undefined;
      const handle: LogHandle = {
        id: first.id,
        async size() {
          const s = await statOf(path);
          // Rotated away: what the proxy can still tell is the size last seen.
          return s && s.id === first.id ? s.size : first.size;
        },
        async read(offset, length) {
          const r = await call("read", {
            path,
            id: first.id,
            offset: String(offset),
            length: String(Math.min(length, 256 * 1024)),
          });
          if (r.status === 409 || r.status === 404) return new Uint8Array();
          if (!r.ok) throw new Error(`cri-proxy log read answered ${r.status}`);
          return new Uint8Array(await r.arrayBuffer());
        },
        pathId: async () => (await statOf(path))?.id,
        close: async () => undefined,
      };
      return handle;
    },
  };
}
