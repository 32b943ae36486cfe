// podsync delete: stop and remove pods and forget them (DELETE /v1/pods/{uid}), as kubectl delete pod does.
import { fail, usage } from "../args.js";
import type { Command } from "../command.js";
import { containerLines, stepLines, type ContainerLinesInput, type Step } from "../output.js";
import { podName, resolvePod } from "../pod-ref.js";
import { progress } from "../progress.js";

/** kubelet's default when the pod gives none (pkg/apis/core/v1/defaults.go: DefaultTerminationGracePeriodSeconds). */
const DEFAULT_GRACE_S = 30;

const del: Command = {
  usage: ["delete [pod] NAME... [-n NS] [--grace-period=SECONDS | --now] [--wait=false] [--json]"],
  help: "Stop the pods' containers (each gets its grace period, then SIGKILL), remove their sandboxes and forget them:\nthe node stops keeping them running. Answers when they are gone (kubectl's --wait); with --wait=false, as soon\nas the node has taken them out of its desired state (the kill goes on there). A pod is named by its name or uid.",
  examples: [
    "podsync delete web",
    "podsync delete pod/web -n prod --now",
    "podsync delete web --grace-period=5",
    "podsync delete web --wait=false",
  ],
  options: {
    "grace-period": {
      type: "string",
      help: "seconds each container gets to stop (default: the pod's terminationGracePeriodSeconds, else 30)",
    },
    now: { type: "boolean", help: "stop at once (the same as --grace-period=1)" },
    wait: {
      type: "boolean",
      help: "wait until the pod is gone (the default); --wait=false answers once the node took it out of the desired state",
    },
    json: { type: "boolean", help: "print the node's answer as JSON" },
  },
  async run(ctx) {
    const o = ctx.o;
    let args = ctx.args;
    if (args[0] && /^(pods?|po)$/i.test(args[0])) args = args.slice(1);
    if (!args.length) usage("delete needs a pod name (or uid)", ctx.command);
    const wait = o["wait"] !== false;
    let grace: number | undefined;
    if (o["grace-period"] !== undefined) {
      grace = Number(o["grace-period"]);
      if (!Number.isInteger(grace) || grace < -1)
        usage("--grace-period must be a whole number of seconds (-1: the pod's own)", ctx.command);
      if (grace === -1) grace = undefined;
    }
    if (o["now"]) {
      if (grace !== undefined) usage("--now and --grace-period cannot both be given", ctx.command);
      grace = 1;
    }
    let failed = false;
    for (const arg of args) {
      const ref = await resolvePod(ctx, podName(arg));
      const seconds = grace ?? ref.pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_S;
      const started = Date.now();
      const p = progress(ctx);
      if (wait)
        p.every(() => {
          const left = Math.max(0, seconds - Math.floor((Date.now() - started) / 1000));
          p.update(
            `deleting pod "${ref.name}": stopping its containers (grace period ${seconds}s, ${left}s left${left === 0 ? ", then SIGKILL" : ""})`,
          );
        });
      let body: Record<string, unknown>;
      try {
        body = await ctx.call("DELETE", `/v1/pods/${encodeURIComponent(ref.uid)}${wait ? "" : "?wait=false"}`, {
          act: "delete",
          uid: ref.uid,
          ...(grace !== undefined ? { gracePeriodSeconds: grace } : {}),
        });
      } finally {
        p.done();
      }
      if (o["json"]) console.log(JSON.stringify(body, null, 2));
      else if (body["ok"] === false) {
        failed = true;
        process.stderr.write(
          `${[
            `podsync: pod "${ref.name}" deleted from the desired state, but not every step succeeded:`,
            ...stepLines((body["steps"] as Step[] | undefined) ?? []),
            ...containerLines(body["runtime"] as ContainerLinesInput),
          ].join("\n")}\n`,
        );
      } else console.log(`pod "${ref.name}" deleted`);
    }
    if (failed)
      fail("some pods were not fully removed (see above); the loop does not bring them back, run delete again");
  },
};
export default del;
