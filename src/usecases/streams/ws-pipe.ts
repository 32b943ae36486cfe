// One direction of a joined WebSocket pair (exec: the client's socket and the runtime's streaming server), with
// back-pressure: frames read from `from` are sent on `to`, and while `to` holds more than `highWaterMark` bytes
// not yet handed to the kernel (ws's bufferedAmount) `from` is paused, so its socket is not read and TCP's own
// window stops the sender (a process writing `cat /dev/zero` blocks in write(2), as it would under kubelet's
// streaming server, whose io.Copy never reads ahead of the writer: client-go remotecommand's v4 protocol). It
// resumes once `to` has flushed below `lowWaterMark`. Memory per direction is then bounded by the high-water
// mark plus one frame (the receiving side's maxPayload). A paused socket does not read, so it would not see its
// peer go away either: while paused, `from` is pinged every `livenessMs`, and a write to a peer that is gone
// fails, which closes it (and the session with it).
import type { RawData, WebSocket } from "ws";

export interface PipeOptions {
  highWaterMark: number;
  lowWaterMark?: number;
  /** A frame that is not passed on (false), e.g. v5's close signal that v4 has no form for. */
  keep?: (frame: Buffer) => boolean;
  /** While paused, how often `from` is pinged to notice a peer that went away (2 s). */
  livenessMs?: number;
}

export function pipeFrames(from: WebSocket, to: WebSocket, o: PipeOptions): void {
  const low = o.lowWaterMark ?? Math.floor(o.highWaterMark / 4);
  let paused = false;
  let liveness: ReturnType<typeof setInterval> | undefined;
  const flushed = () => {
    if (paused && to.bufferedAmount <= low) {
      paused = false;
      clearInterval(liveness);
      from.resume();
    }
  };
  const ping = () => {
    try {
      from.ping();
    } catch {
      clearInterval(liveness);
    }
  };
  from.once("close", () => clearInterval(liveness));
  from.on("message", (data: RawData, binary) => {
    const frame = data as Buffer;
    if (o.keep && !o.keep(frame)) return;
    if (to.readyState !== 1) return; // closing: what is still read is dropped with it
    // The callback runs once the frame's bytes are written to the socket (or the socket failed).
    to.send(frame, { binary }, flushed);
    if (!paused && to.bufferedAmount > o.highWaterMark) {
      paused = true;
      from.pause();
      liveness = setInterval(ping, o.livenessMs ?? 2000);
      liveness.unref?.();
    }
  });
}
