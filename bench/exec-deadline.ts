// What a short ExecSync deadline does to the runtime under load (issue #42; bench/results/log-2026-12-07-full-node.md):
// BENCH_PODS (110) raw pods created at 8 in flight on a lab containerd of its own, while this process makes an exec
// probe (`true`, the runtime's 1 s timeout) into every other container every 10 s, all at once, from the first
// container on. BENCH_DEADLINE_MS sets the calls' deadline (none: this process's 60 s). Prints, each minute, how
// many probed containers had a failed exec and which never had one succeed. On this VM (containerd 1.6.20, runc
// 1.1.5): without a deadline no exec failed in 4 minutes; with 3000 ms (the prober's old timeout + 2 s) every
// probed container failed most of its execs, minutes after the creation ended.
//   BENCH_DEADLINE_MS=3000 npx tsx bench/exec-deadline.ts
import { join } from "node:path";
import { connectGrpc } from "../src/cri/grpc-transport.js";
import { lab, pool, rawPod, sleep } from "./harness.js";

const LAB = process.env["BENCH_LAB_DIR"] ?? "/tmp/podsync-lab-exec-deadline";
const PODS = Number(process.env["BENCH_PODS"] ?? 110);
const MINUTES = Number(process.env["BENCH_MINUTES"] ?? 4);
const DEADLINE = process.env["BENCH_DEADLINE_MS"];

async function main() {
  const cri = connectGrpc({ endpoint: `unix://${lab(LAB, "start")}`, timeoutMs: 60_000 });
  const probed: string[] = [];
  const fails = new Map<string, number>();
  const oks = new Map<string, number>();
  const count = (m: Map<string, number>, id: string) => m.set(id, (m.get(id) ?? 0) + 1);
  let stop = false;
  const prober = (async () => {
    while (!stop) {
      const tick = Date.now();
      await Promise.all(
        [...probed].map((id) =>
          cri
            .execSync({ containerId: id, cmd: ["true"], timeout: 1n }, DEADLINE ? { timeoutMs: Number(DEADLINE) } : {})
            .then((r) => count(r.exitCode === 0 ? oks : fails, id))
            .catch(() => count(fails, id)),
        ),
      );
      await sleep(Math.max(0, 10_000 - (Date.now() - tick)));
    }
  })();
  try {
    const t0 = Date.now();
    await pool(
      Array.from({ length: PODS }, (_, i) => i),
      8,
      async (i) => {
        const { containerId } = await rawPod(
          cri,
          join(LAB, "pod-logs"),
          `xd-${i}`,
          "exec-deadline",
          `xd-${process.pid}-${i}`,
        );
        if (i % 2 === 0) probed.push(containerId);
      },
    );
    console.log(`created ${PODS} pods in ${Date.now() - t0} ms; deadline ${DEADLINE ?? "none"}`);
    for (let m = 1; m <= MINUTES; m++) {
      await sleep(60_000);
      const failing = probed.filter((id) => (fails.get(id) ?? 0) > 0).length;
      const never = probed.filter((id) => !oks.get(id)).length;
      console.log(`minute ${m}: ${failing} of ${probed.length} with a failed exec; never succeeded: ${never}`);
    }
  } finally {
    stop = true;
    await prober;
    cri.close();
    lab(LAB, "stop");
  }
}

await main();
