// A response body fed by an async producer, with backpressure (the producer waits while the client is slow)
// and cancellation (a client that goes away aborts the producer: the body's cancel on Node; on workerd, where an
// idle stream writes nothing that could fail and its body is not cancelled, the request's signal, `clientGone`).
// An error after the first byte can only end the stream: the status line is already sent.
export function streamFrom(
  produce: (write: (bytes: Uint8Array) => Promise<void>, signal: AbortSignal) => Promise<void>,
  onError: (e: unknown) => void,
  clientGone?: AbortSignal,
): ReadableStream<Uint8Array> {
  const ac = new AbortController();
  let wake: (() => void) | undefined;
  const gone = () => {
    ac.abort();
    wake?.();
  };
  if (clientGone?.aborted) gone();
  else clientGone?.addEventListener("abort", gone, { once: true });
  /** Closed unless cancelled (closing a cancelled stream throws). */
  const close = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    try {
      controller.close();
    } catch {
      /* cancelled */
    }
  };
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const write = async (bytes: Uint8Array) => {
          if (ac.signal.aborted) return;
          controller.enqueue(bytes);
          while ((controller.desiredSize ?? 1) <= 0 && !ac.signal.aborted) await new Promise<void>((r) => (wake = r));
        };
        produce(write, ac.signal).then(
          () => close(controller),
          (e) => {
            onError(e);
            close(controller);
          },
        );
      },
      pull() {
        wake?.();
      },
      cancel: gone,
    },
    { highWaterMark: 256 * 1024, size: (b) => b.byteLength },
  );
}
