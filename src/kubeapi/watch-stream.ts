// A watch response: newline-delimited watch events ({"type": ..., "object": ...}, metav1.WatchEvent) from a
// WatchHub, with bookmarks when asked, an end after the watch's timeout, and no unbounded buffer: a watcher
// whose unread events pass `maxQueueBytes` (it stopped reading; the socket's buffers are full) is dropped,
// as the API server's cacher drops a watcher that cannot keep up. The client lists and watches again.
import type { Change, KubeObject, WatchHub } from "./watch-hub.js";

export interface WatchStreamOptions<T extends KubeObject> {
  hub: WatchHub<T>;
  since: number | undefined;
  filter: (obj: T) => boolean;
  /** The event as JSON text; `first`: the stream's first event (a Table carries its columns only there). */
  encode: (c: Change<T>, first: boolean) => string;
  /** Send a BOOKMARK this often (allowWatchBookmarks); the object is a bare one of the kind. */
  bookmark?: { everyMs: number; kind: string; apiVersion: string } | undefined;
  /** sendInitialEvents: the current objects first, then a bookmark marking their end. */
  initialEventsEnd?: boolean;
  maxMs: number;
  maxQueueBytes: number;
  onDrop?: () => void;
}

const enc = new TextEncoder();

/** Throws (before any byte) what hub.watch throws: 410 Expired for a resourceVersion too old. */
export function watchStream<T extends KubeObject>(o: WatchStreamOptions<T>): ReadableStream<Uint8Array> {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let done = false;
  let first = true;
  let lastRv = o.since ?? o.hub.resourceVersion;
  let timeout: ReturnType<typeof setTimeout> | undefined;
  let ticker: ReturnType<typeof setInterval> | undefined;
  const clear = () => {
    clearTimeout(timeout);
    clearInterval(ticker);
  };
  let stop: () => void = () => undefined;
  const end = (drop: boolean) => {
    if (done) return;
    done = true;
    stop();
    clear();
    if (drop) {
      o.onDrop?.();
      controller.error(new Error("watcher dropped: it did not read its events"));
    } else controller.close();
  };
  const push = (text: string) => {
    if (done) return;
    controller.enqueue(enc.encode(`${text}\n`));
    if ((controller.desiredSize ?? 0) < -o.maxQueueBytes) end(true);
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      cancel() {
        done = true;
        stop();
        clear();
      },
    },
    { highWaterMark: 64 * 1024, size: (b) => b.byteLength },
  );
  const bookmark = (annotations?: Record<string, string>) =>
    o.bookmark &&
    push(
      JSON.stringify({
        type: "BOOKMARK",
        object: {
          kind: o.bookmark.kind,
          apiVersion: o.bookmark.apiVersion,
          metadata: { resourceVersion: String(lastRv), ...(annotations ? { annotations } : {}) },
        },
      }),
    );
  try {
    stop = o.hub.watch({
      since: o.since,
      filter: o.filter,
      send: (c) => {
        lastRv = Math.max(lastRv, c.rv);
        push(o.encode(c, first));
        first = false;
      },
    });
  } catch (e) {
    done = true;
    throw e;
  }
  if (done) stop(); // dropped while its first events were queued
  if (o.initialEventsEnd) {
    lastRv = Math.max(lastRv, o.hub.resourceVersion);
    bookmark({ "k8s.io/initial-events-end": "true" });
  }
  timeout = setTimeout(() => end(false), o.maxMs);
  timeout.unref?.();
  if (o.bookmark) {
    ticker = setInterval(() => {
      lastRv = Math.max(lastRv, o.hub.resourceVersion);
      bookmark();
    }, o.bookmark.everyMs);
    ticker.unref?.();
  }
  return stream;
}
