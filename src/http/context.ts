// What the app's routes share: the request's context variables (for the request log) and the node's pieces
// every pod route is handed by createApp.
import type { Context } from "hono";
import type { Verifier } from "../auth/verify.js";
import type { DesiredPod } from "../pleg/desired-state.js";
import type { PodDispatch } from "../podworkers/dispatch.js";
import type { NodePorts } from "../usecases/ports.js";

export type AppEnv = {
  Variables: { podUid?: string; criCalls: number; jti?: string; iss?: string; commandSha256?: string; error?: string };
};

/** Record who acted, for the request log. */
export const note = (c: Context<AppEnv>, uid: string, jti: string | undefined) => {
  c.set("podUid", uid);
  if (jti) c.set("jti", jti);
};

/** The node's pieces the pod routes use, as createApp resolved them (defaults applied): the use cases' ports
 * (src/usecases/ports.ts) and the routes' own (the verifier, the body bound, the pod workers). */
export type PodRouteDeps = NodePorts & {
  verifier: Verifier;
  maxBodyBytes: number;
  /** The pod workers (src/podworkers/): a request's sync and a PUT's teardowns run in the pod's worker. */
  pods: PodDispatch<DesiredPod>;
};
