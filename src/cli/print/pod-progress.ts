// The progress of an apply or a sync on stderr: a heading (what runs, its elapsed time) and under it one line per
// pod with what the node last did to it (`pod/web: Pulling image "nginx:1.27"`). On a terminal the block is
// rewritten in place (one line per pod, cleared at the end); otherwise each new state is printed once as a plain
// line (a heading that differs only by its seconds is not printed again). -q prints none.
import type { Ctx } from "../client.js";

export interface PodProgress {
  /** The heading line (redrawn every second on a terminal). */
  heading(text: string): void;
  /** A pod's (or an object's) newest state, `ref` as `pod/web`. */
  set(ref: string, text: string): void;
  /** Clears the block (a terminal). */
  done(): void;
}

type Stream = Pick<NodeJS.WriteStream, "write" | "isTTY" | "columns" | "rows">;

export function podProgress(ctx: Pick<Ctx, "quiet">, stream: Stream = process.stderr): PodProgress {
  const tty = Boolean(stream.isTTY);
  let head = "";
  const pods = new Map<string, string>();
  let drawn = 0;
  // A line wider than the terminal wraps and would break the cursor-up count: cut it to the width.
  const fit = (l: string) => (stream.columns && l.length >= stream.columns ? `${l.slice(0, stream.columns - 2)}…` : l);
  const draw = () => {
    // No more lines than the terminal shows (the cursor cannot go up past its top): the newest pods, and a count.
    const room = Math.max(1, (stream.rows || 25) - 2);
    const all = [...pods].map(([ref, t]) => `${ref}: ${t}`);
    const shown = all.length > room ? [...all.slice(-(room - 1)), `… and ${all.length - room + 1} more`] : all;
    const lines = [head, ...shown].filter(Boolean).map(fit);
    stream.write(`${drawn ? `\x1b[${drawn}F` : "\r"}\x1b[J${lines.map((l) => `${l}\n`).join("")}`);
    drawn = lines.length;
  };
  return {
    heading(text) {
      if (ctx.quiet || text === head) return;
      const same = text.replace(/\d+s\b/g, "") === head.replace(/\d+s\b/g, "");
      head = text;
      if (tty) draw();
      else if (!same) stream.write(`${text}\n`);
    },
    set(ref, text) {
      if (ctx.quiet || pods.get(ref) === text) return;
      pods.delete(ref); // the pod that changed last is drawn last
      pods.set(ref, text);
      if (tty) draw();
      else stream.write(`${ref}: ${text}\n`);
    },
    done() {
      if (tty && drawn && !ctx.quiet) stream.write(`\x1b[${drawn}F\x1b[J`);
      drawn = 0;
    },
  };
}
