// A response body fed by an async producer, with backpressure (the producer waits while the client is slow)
// and cancellation (a client that goes away aborts the producer). An error after the first byte can only
// end the stream: the status line is already sent.
export function streamFrom(produce: (write: (bytes: Uint8Array) => Promise<void>, signal: AbortSignal) => Promise<void>, onError: (e: unknown) => void): ReadableStream<Uint8Array> {
  const ac = new AbortController();
  let wake: (() => void) | undefined;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const write = async (bytes: Uint8Array) => {
          if (ac.signal.aborted) return;
          controller.enqueue(bytes);
          while ((controller.desiredSize ?? 1) <= 0 && !ac.signal.aborted) await new Promise<void>((r) => (wake = r));
        };
        produce(write, ac.signal).then(
          () => {
            if (!ac.signal.aborted) controller.close();
          },
          (e) => {
            onError(e);
            if (!ac.signal.aborted) controller.close();
          },
        );
      },
      pull() {
        wake?.();
      },
      cancel() {
        ac.abort();
        wake?.();
      },
    },
    { highWaterMark: 256 * 1024, size: (b) => b.byteLength },
  );
}
