// podsync exec: run a command in a container (the node owner must allow exec); exits with its exit code.
import { fail } from "../args.js";
import type { Command } from "../command.js";
import { printResult } from "../output.js";

const exec: Command = {
  usage: ["exec UID [-c NAME] [--timeout SECONDS] -- CMD [ARGS...]"],
  help: "Run a command in the container (the node owner must allow exec) and exit with its exit code.",
  examples: ["podsync exec UID -- ls /", "podsync exec UID -c sidecar -- sh -c 'echo hi'"],
  options: { container: { type: "string", short: "c" }, timeout: { type: "string" } },
  async run(ctx) {
    const [uid, ...command] = ctx.args;
    if (!uid) fail("exec needs a pod uid");
    if (command.length === 0) fail("exec needs a command after --, e.g. podsync exec UID -- ls /");
    const o = ctx.o;
    const timeoutSeconds = o["timeout"] === undefined ? undefined : Number(o["timeout"]);
    if (timeoutSeconds !== undefined && !(Number.isInteger(timeoutSeconds) && timeoutSeconds > 0)) fail("--timeout must be a whole number of seconds");
    // The token binds this exact argv: it is the whole request.
    const claims = { act: "exec", uid, command, ...(o["container"] ? { container: String(o["container"]) } : {}), ...(timeoutSeconds ? { timeoutSeconds } : {}) };
    const token = await ctx.sign(claims);
    const r = await fetch(`${ctx.url}/v1/pods/${encodeURIComponent(uid)}/exec`, { method: "POST", headers: { "content-type": "application/jose" }, body: token });
    const body = (await r.json()) as Record<string, unknown>;
    if (!r.ok) {
      printResult(r.status, body);
      process.exitCode = 1;
      return;
    }
    type Out = { data: string; encoding: string; truncated: boolean; bytes: number };
    const write = (stream: NodeJS.WriteStream, out: Out, name: string) => {
      stream.write(out.encoding === "base64" ? Buffer.from(out.data, "base64") : out.data);
      if (out.truncated) console.error(`podsync: ${name} cut at ${Buffer.byteLength(out.data, out.encoding === "base64" ? "base64" : "utf8")} of ${out.bytes} bytes`);
    };
    write(process.stdout, body["stdout"] as Out, "stdout");
    write(process.stderr, body["stderr"] as Out, "stderr");
    process.exitCode = Number(body["exitCode"]);
  },
};
export default exec;
