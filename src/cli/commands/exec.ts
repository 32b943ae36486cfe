// podsync exec: run a command in a container (the node owner must allow exec); exits with its exit code.
import { usage } from "../args.js";
import { ServerError } from "../client.js";
import type { Command } from "../command.js";
import { resolvePod } from "../pod-ref.js";

const exec: Command = {
  usage: ["exec NAME [-n NS] [-c CONTAINER] [--timeout SECONDS] -- COMMAND [ARGS...]"],
  help: "Run a command in the container to completion and print its output; podsync exits with the command's exit\ncode (127 when the container has no such command, as a shell). The node owner must allow exec (PODSYNC_ALLOW_EXEC=true). There is no stdin or terminal (-i, -t).",
  examples: ["podsync exec web -- ls /", "podsync exec web -c sidecar -- sh -c 'echo $HOSTNAME'"],
  options: {
    container: {
      type: "string",
      short: "c",
      help: "the container (default: the only one, or the default-container annotation's)",
    },
    timeout: { type: "string", help: "seconds the command may run (the node's default otherwise)" },
    stdin: { type: "boolean", short: "i", help: "not available (see above)" },
    tty: { type: "boolean", short: "t", help: "not available (see above)" },
  },
  async run(ctx) {
    const o = ctx.o;
    if (o["stdin"] || o["tty"])
      usage(
        `exec has no interactive mode (${[o["stdin"] ? "-i" : "", o["tty"] ? "-t" : ""].filter(Boolean).join(", ")}): it runs the command to completion and prints its output.\n` +
          `Leave out -i/-t, e.g. podsync exec ${ctx.args[0] ?? "NAME"} -- sh -c 'ls /'; for an interactive shell use kubectl exec -it (podsync kubeconfig sets kubectl up for this node).`,
        ctx.command,
      );
    const [arg, ...command] = ctx.args;
    if (!arg) usage("exec needs a pod name (or uid)", ctx.command);
    if (command.length === 0) usage(`exec needs a command after --, e.g. podsync exec ${arg} -- ls /`, ctx.command);
    const timeoutSeconds = o["timeout"] === undefined ? undefined : Number(o["timeout"]);
    if (timeoutSeconds !== undefined && !(Number.isInteger(timeoutSeconds) && timeoutSeconds > 0))
      usage("--timeout must be a whole number of seconds", ctx.command);
    const ref = await resolvePod(ctx, arg);
    // The token binds this exact argv: it is the whole request.
    const claims = {
      act: "exec",
      uid: ref.uid,
      command,
      ...(o["container"] ? { container: String(o["container"]) } : {}),
      ...(timeoutSeconds ? { timeoutSeconds } : {}),
    };
    const token = await ctx.sign(claims);
    let body: Record<string, unknown>;
    try {
      body = await ctx.json(
        await ctx.fetch(`/v1/pods/${encodeURIComponent(ref.uid)}/exec`, {
          method: "POST",
          headers: { "content-type": "application/jose" },
          body: token,
        }),
      );
    } catch (e) {
      // No such command in the container: a shell's exit code 127, and the node's words.
      if (!(e instanceof ServerError) || !String(e.problem["type"]).endsWith(":command-not-found")) throw e;
      process.stderr.write(`podsync: ${e.message} (in pod ${ref.namespace}/${ref.name})\n`);
      process.exitCode = 127;
      return;
    }
    type Out = { data: string; encoding: string; truncated: boolean; bytes: number };
    const write = (stream: NodeJS.WriteStream, out: Out, name: string) => {
      stream.write(out.encoding === "base64" ? Buffer.from(out.data, "base64") : out.data);
      if (out.truncated)
        process.stderr.write(
          `podsync: ${name} cut at ${Buffer.byteLength(out.data, out.encoding === "base64" ? "base64" : "utf8")} of ${out.bytes} bytes\n`,
        );
    };
    write(process.stdout, body["stdout"] as Out, "stdout");
    write(process.stderr, body["stderr"] as Out, "stderr");
    process.exitCode = Number(body["exitCode"]);
  },
};
export default exec;
