// Query parameters and paths as the API server reads them, before routing:
// - booleans: every value Go's strconv.ParseBool reads (1, t, T, TRUE, true, True; 0, f, F, FALSE, false, False)
//   means what it means there; any other value is true, as apimachinery's runtime/conversion.go
//   Convert_Slice_string_To_bool reads it (only "0" and "false" in any case are false there, so upstream reads
//   `f` as true: the one value where podsync follows ParseBool instead);
// - parameters the API server ignores are dropped: `pretty` everywhere (handlers/rest.go only sets indentation),
//   and `stream=All` on pods/log (PodLogOptions.Stream's default: both streams, which is what podsync reads);
// - a trailing slash is the path without it (the mux's /api/, /apis/, /version/ are the same handlers);
// - the legacy watch paths (/api/v1/watch/..., /apis/{g}/{v}/watch/...: installer.go's "WATCH" and "WATCHLIST"
//   actions) are the list path with watch=true.
const FALSE = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/** A boolean query parameter: absent is false; ParseBool's false forms and any case of "false" are false;
 * anything else (an empty value too) is true, as Convert_Slice_string_To_bool. */
export function parseBool(v: string | undefined): boolean {
  if (v === undefined) return false;
  return !(FALSE.has(v) || v.toLowerCase() === "false");
}

/** The boolean parameters the served routes read (ListOptions, PodLogOptions, PodExecOptions, ...). */
const BOOLEANS = [
  "watch",
  "allowWatchBookmarks",
  "sendInitialEvents",
  "follow",
  "previous",
  "timestamps",
  "insecureSkipTLSVerifyBackend",
  "stdin",
  "stdout",
  "stderr",
  "tty",
];

const LEGACY_WATCH = /^\/(api\/v1|apis\/[^/]+\/[^/]+)\/watch\/(.+)$/;
const LOG_PATH = /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/log$/;

/** The request as the routes read it: the path without a trailing slash or the legacy watch prefix, booleans
 * in canonical form ("true"/"false"), and the ignored parameters gone. */
export function normalizeRequest(req: Request): Request {
  const url = new URL(req.url);
  let path = url.pathname;
  if (path.length > 1 && path.endsWith("/")) path = path.replace(/\/+$/, "");
  const legacy = LEGACY_WATCH.exec(path);
  if (legacy) {
    path = `/${legacy[1]}/${legacy[2]}`;
    url.searchParams.set("watch", "true");
  }
  const q = url.searchParams;
  q.delete("pretty");
  if (LOG_PATH.test(path) && q.get("stream") === "All") q.delete("stream");
  for (const name of BOOLEANS) {
    const v = q.get(name);
    if (v !== null) q.set(name, String(parseBool(v)));
  }
  const changed = path !== url.pathname || url.search !== new URL(req.url).search;
  if (!changed) return req;
  url.pathname = path;
  return new Request(url, req);
}
