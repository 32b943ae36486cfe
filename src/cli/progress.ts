// Progress of long operations (a grace period's countdown, a pull, a wait) on stderr, never stdout: on a
// terminal one line rewritten in place; otherwise each new message once. -q prints none.
import type { Ctx } from "./client.js";

export interface Progress {
  /** The current state; on a terminal it replaces the previous line. */
  update(text: string): void;
  /** Clears the line (a terminal) and stops the ticker. */
  done(): void;
  /** Calls `tick` every second until done() (for countdowns and elapsed times). */
  every(tick: () => void): void;
}

export function progress(ctx: Pick<Ctx, "quiet">, stream: NodeJS.WriteStream = process.stderr): Progress {
  let last = "";
  let timer: NodeJS.Timeout | undefined;
  const tty = Boolean(stream.isTTY);
  const p: Progress = {
    update(text) {
      if (ctx.quiet || text === last) return;
      // Without a terminal, a message that differs only by its seconds is not printed again.
      if (!tty && text.replace(/\d+s\b/g, "") === last.replace(/\d+s\b/g, "")) return;
      last = text;
      stream.write(tty ? `\r\x1b[K${text}` : `${text}\n`);
    },
    done() {
      if (timer) clearInterval(timer);
      timer = undefined;
      if (tty && last && !ctx.quiet) stream.write("\r\x1b[K");
      last = "";
    },
    every(tick) {
      tick();
      timer = setInterval(tick, 1000);
      timer.unref();
    },
  };
  return p;
}

/** A duration as kubectl's --timeout takes it: 30s, 5m, 1h, 500ms, or plain seconds. */
export function parseDuration(v: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(v.trim());
  if (!m) return undefined;
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? "s") as "s"];
}
