// GET /v1/node/volumes and DELETE /v1/node/volumes/{name}?namespace=NS: the node's persistentVolumeClaim
// directories (claims.ts), one per namespace and claim. Listing takes a Bearer token with act "status" and no uid;
// removal one with act "delete", a `volume` claim naming the volume in the path and, for a namespace other than
// "default", a `namespace` claim naming it (the query's), acting once. A claim a pod still uses is 409 volume-in-use; the
// check and the removal hold the node's admission section, so a pod stored meanwhile cannot slip in between.
import type { Context, Env, Hono } from "hono";
import { AuthError, type Verifier, type VerifiedToken } from "../../auth/verify.js";
import type { PodRuntime } from "../../kubelet/pod-runtime.js";
import type { Pod } from "../../pod/schema.js";
import { ProblemError } from "../../usecases/problems.js";
import type { Serial } from "../../util/serial.js";

const CLAIM_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export interface VolumeRoutes {
  runtime: PodRuntime;
  verifier: Verifier;
  /** The pods that should run on the node (the desired state), whose claims are in use even with no container. */
  desired?: () => Promise<readonly Pod[]>;
  note: (c: Context, f: { jti?: string | undefined; criCalls?: number }) => void;
  /** The node-wide admission section (app.ts): a removal's in-use check and the removal run inside it, so no
   * pod naming the claim is admitted between the two. */
  admitting?: Serial;
}

async function bearer(
  req: Request,
  verifier: Verifier,
  act: "status" | "delete",
  volume: string | undefined,
  namespace?: string,
): Promise<VerifiedToken> {
  const m = /^Bearer\s+(\S+)$/i.exec(req.headers.get("authorization") ?? "");
  if (!m) throw new AuthError("missing", "send Authorization: Bearer <compact JWS>");
  return verifier.verify(m[1]!, {
    consume: act === "delete",
    check: (p) => {
      if (p["act"] !== act)
        return new AuthError(
          "bad-claims",
          `token "act" claim must be "${act}" for this route (got ${JSON.stringify(p["act"] ?? null)})`,
        );
      if (p["uid"] !== undefined) return new AuthError("bad-claims", 'a node-wide token carries no "uid" claim');
      if (volume !== undefined && p["volume"] !== volume)
        return new AuthError("bad-claims", `token "volume" claim must be the volume in the path (${volume})`);
      if (namespace !== undefined && (p["namespace"] ?? "default") !== namespace)
        return new AuthError("bad-claims", `token "namespace" claim must be the volume's namespace (${namespace})`);
      return undefined;
    },
  });
}

export function registerVolumes<E extends Env>(
  app: Hono<E>,
  paths: { list: string; one: string },
  o: VolumeRoutes,
): void {
  app.get(paths.list, async (c) => {
    const token = await bearer(c.req.raw, o.verifier, "status", undefined);
    const r = await o.runtime.claims(await (o.desired?.() ?? Promise.resolve([])));
    o.note(c, { jti: token.payload.jti, criCalls: r.criCalls });
    return c.json({ volumes: r.claims });
  });

  app.delete(paths.one, async (c) => {
    const name = c.req.param("name") ?? "";
    if (name.length > 253 || !CLAIM_NAME.test(name))
      throw new ProblemError("bad-request", "the volume name in the path must be a claim name (a DNS-1123 subdomain)", {
        errors: [{ path: "name", message: "invalid volume name" }],
      });
    const namespace = c.req.query("namespace") ?? "default";
    if (namespace.length > 63 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(namespace))
      throw new ProblemError(
        "bad-request",
        "the namespace query parameter must be a namespace name (a DNS-1123 label)",
        {
          errors: [{ path: "namespace", message: "invalid namespace" }],
        },
      );
    const token = await bearer(c.req.raw, o.verifier, "delete", name, namespace);
    const remove = async () => o.runtime.removeClaim(namespace, name, await (o.desired?.() ?? Promise.resolve([])));
    const r = await (o.admitting ? o.admitting(remove) : remove());
    o.note(c, { jti: token.payload.jti, criCalls: r.criCalls });
    return c.json({ ok: true, removed: name, namespace });
  });
}
