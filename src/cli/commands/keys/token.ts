// podsync token: print a Bearer token for curl and other HTTP clients of the read and delete routes.
//   curl -H "Authorization: Bearer $(podsync token --act status)" $PODSYNC_URL/v1/pods
// Each act says whether it is scoped to one pod; a new act (or mode) is one entry in ACTS.
// `--act read` is the Kubernetes API's scope (kubectl); with --exec-credential the token is printed as kubectl's
// ExecCredential (client.authentication.k8s.io/v1): the exec credential plugin `podsync kubeconfig` sets up.
import { usage } from "../../args.js";
import { READ_ACT } from "../../../auth/read-token.js";
import type { Ctx } from "../../client.js";
import type { Command } from "../../command.js";
import { resolvePod } from "../../pod-ref.js";
import { FLEET_ACTS } from "../../../http/fleet/protocol.js";
import { signToken } from "../../keys.js";
import { fleetName } from "../../fleet/command.js";

interface Act {
  /** "required": the token names one pod (--uid or --name); "optional": a pod, or the whole node; "none". */
  pod: "required" | "optional" | "none";
  /** What it opens, for --help. */
  routes: string;
  /** Claims beyond act and uid, from the flags. */
  claims?(ctx: Ctx): Record<string, unknown>;
}

const ACTS: Record<string, Act> = {
  status: {
    pod: "optional",
    routes: "GET /v1/pods (no pod), GET /v1/pods/{uid}, GET /v1/pods/{uid}/runtime, GET /v1/node/volumes",
  },
  logs: { pod: "required", routes: "GET /v1/pods/{uid}/logs" },
  delete: {
    pod: "required",
    routes: "DELETE /v1/pods/{uid} (once: the node remembers used tokens)",
    claims: (ctx) => {
      if (ctx.o["grace-period"] === undefined) return {};
      const g = Number(ctx.o["grace-period"]);
      if (!Number.isInteger(g) || g < 0) usage("--grace-period must be a whole number of seconds", ctx.command);
      return { gracePeriodSeconds: g };
    },
  },
  metrics: { pod: "none", routes: "GET /metrics" },
  [READ_ACT]: {
    pod: "none",
    routes:
      "the Kubernetes API (kubectl get, list, watch, describe, logs, events); with --exec also kubectl exec, where the node allows it",
    claims: (ctx) => ({
      ...(ctx.o["exec"] ? { exec: true } : {}),
      ...(ctx.o["port-forward"] ? { portForward: true } : {}),
    }),
  },
};

/** A read token's longest life: the node's default PODSYNC_MAX_TOKEN_LIFETIME_S. */
export const READ_TTL_MAX_S = 300;

/** kubectl's ExecCredential around a token that lives `ttl` s: kubectl keeps it until expirationTimestamp, set a
 * little before the token's own exp for clock skew. */
export function execCredential(token: string, ttl: number, now = Date.now()): string {
  const expirationTimestamp = new Date(now + Math.max(1, ttl - 10) * 1000).toISOString().replace(/\.\d+Z$/, "Z");
  return JSON.stringify({
    apiVersion: "client.authentication.k8s.io/v1",
    kind: "ExecCredential",
    status: { token, expirationTimestamp },
  });
}

const token: Command = {
  usage: [
    "token --act status|logs|delete|metrics [--uid UID | --name NAME [-n NS]] [--ttl SECONDS]",
    "token --act read [--exec] [--port-forward] [--exec-credential] [--ttl SECONDS]   (kubectl's; --ttl at most 300)",
    `token --act ${FLEET_ACTS.join("|")} [--selector SEL] [--fleet]   (a fleet token: podsync fleet --token FILE)`,
  ],
  help: [
    "Print a signed Bearer token (a compact JWS) for the node, for curl and other HTTP clients:",
    ...Object.entries(ACTS).map(
      ([k, a]) => `  ${k.padEnd(8)} ${a.routes}${a.pod === "required" ? " (needs --uid or --name)" : ""}`,
    ),
    "It is signed with the first key found in: --key, $PODSYNC_KEY, the config dir ($XDG_CONFIG_HOME/podsync/key.json,",
    "else ~/.config/podsync/key.json), the dev key (./.podsync/dev-key.json). It lasts --ttl seconds (default 60).",
    `A fleet token (${FLEET_ACTS.join(", ")}; read with --fleet or --selector) is for the fleet at --url, $PODSYNC_URL or`,
    "$PODSYNC_FLEET_URL (aud: its name); --selector limits it to the nodes whose labels match (docs/fleet.md).",
  ].join("\n"),
  examples: [
    'curl -H "Authorization: Bearer $(podsync token --act status)" http://127.0.0.1:8484/v1/pods',
    "podsync token --act logs --name web",
  ],
  options: {
    act: { type: "string", help: Object.keys(ACTS).join(", ") },
    uid: { type: "string", help: "the pod's uid" },
    name: { type: "string", help: "the pod's name (in -n's namespace), looked up on the node" },
    "grace-period": { type: "string", help: "delete: the gracePeriodSeconds claim" },
    exec: {
      type: "boolean",
      help: "read: the token also allows kubectl exec (the node owner must set PODSYNC_ALLOW_EXEC=true)",
    },
    "port-forward": {
      type: "boolean",
      help: "read: the token also allows kubectl port-forward (the node owner must set PODSYNC_ALLOW_PORT_FORWARD=true)",
    },
    selector: { type: "string", help: "a fleet token: only the nodes whose labels match (k=v, k in (a,b), ...)" },
    fleet: { type: "boolean", help: "--act read: a fleet token (the registry), not the node's kubectl scope" },
    "exec-credential": {
      type: "boolean",
      help: "print kubectl's ExecCredential (client.authentication.k8s.io/v1) around the token: the kubeconfig's plugin mode",
    },
  },
  async run(ctx) {
    const name = ctx.o["act"] as string | undefined;
    if (isFleetToken(ctx, name)) {
      const sel = ctx.o["selector"] as string | undefined;
      console.log(
        await signToken(
          ctx.key().key,
          { act: name, ...(sel ? { selector: sel } : {}) },
          await fleetName(ctx),
          ctx.ttl,
          ctx.iss,
        ),
      );
      return;
    }
    const act = name !== undefined && Object.hasOwn(ACTS, name) ? ACTS[name] : undefined;
    if (!act)
      usage(
        `--act must be one of ${Object.keys(ACTS).join(", ")}${name === undefined ? "" : `, not "${name}"`}`,
        ctx.command,
      );
    if (ctx.o["uid"] !== undefined && ctx.o["name"] !== undefined) usage("give --uid or --name, not both", ctx.command);
    let uid = ctx.o["uid"] as string | undefined;
    if (ctx.o["name"] !== undefined) uid = (await resolvePod(ctx, String(ctx.o["name"]))).uid;
    if (act.pod === "required" && uid === undefined) usage(`--act ${name} needs --uid or --name`, ctx.command);
    if (act.pod === "none" && uid !== undefined) usage(`--act ${name} names no pod`, ctx.command);
    if (ctx.o["exec"] && name !== READ_ACT) usage(`--exec goes with --act ${READ_ACT}`, ctx.command);
    if (ctx.o["port-forward"] && name !== READ_ACT) usage(`--port-forward goes with --act ${READ_ACT}`, ctx.command);
    if (name === READ_ACT && ctx.ttl > READ_TTL_MAX_S)
      usage(
        `--ttl for --act ${READ_ACT} is at most ${READ_TTL_MAX_S} seconds (the node refuses longer-lived read tokens)`,
        ctx.command,
      );
    const token = await ctx.sign({ act: name, ...(uid !== undefined ? { uid } : {}), ...act.claims?.(ctx) });
    if (!ctx.o["exec-credential"]) return console.log(token);
    const text = execCredential(token, ctx.ttl);
    console.log(text);
    // The plugin's next run (kubectl's next command) prints it again from the cache (src/cli/token-cache.ts).
    const { cacheDir, cacheKey, writeCached } = await import("../../token-cache.js");
    const key = name === READ_ACT ? cacheKey(process.argv.slice(2)) : undefined;
    if (key) writeCached(cacheDir(), key, text);
  },
};
/** A fleet verb other than read, or read with --fleet or --selector. */
const isFleetToken = (ctx: Ctx, name: string | undefined): name is string =>
  (FLEET_ACTS as readonly string[]).includes(name ?? "") &&
  (name !== READ_ACT || Boolean(ctx.o["fleet"]) || ctx.o["selector"] !== undefined);

export default token;
