// Pull mode in tests and the bench: the owner's fleet, join and desired-set tokens, signed as the CLI signs
// them, and a simulated node agent (the real link over a real WebSocket, a recording apply instead of a runtime).
import { createHash } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SignJWT } from "jose";
import { FleetIdentity } from "../../src/http/fleet/identity.js";
import { startLink, type FleetLink, type LinkOptions } from "../../src/http/fleet/link.js";
import type { DesiredMessage, PodSummary } from "../../src/http/fleet/protocol.js";
import type { FleetNode } from "../../src/http/fleet/node-view.js";
import { ISSUER, type TestKey } from "./http.js";

export const FLEET = "podsync-fleet";

export async function ownerToken(
  key: TestKey,
  claims: Record<string, unknown>,
  o: { aud?: string | string[]; ttlS?: number; iatOffsetS?: number } = {},
): Promise<string> {
  const iat = Math.floor(Date.now() / 1000) + (o.iatOffsetS ?? 0);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "JWT" })
    .setIssuer(ISSUER)
    .setAudience(o.aud ?? FLEET)
    .setIssuedAt(iat)
    .setExpirationTime(iat + (o.ttlS ?? 60))
    .setJti(crypto.randomUUID())
    .sign(key.privateKey);
}

export const joinToken = (
  key: TestKey,
  labels: Record<string, string> = {},
  o: { ttlS?: number; iatOffsetS?: number } = {},
) =>
  ownerToken(
    key,
    { act: "enroll", labels },
    { ttlS: o.ttlS ?? 900, ...(o.iatOffsetS !== undefined ? { iatOffsetS: o.iatOffsetS } : {}) },
  );

/** A desired set for one node, signed as `podsync apply` signs a PUT /v1/node/pods (detached, body_sha256). */
export async function signedSet(
  key: TestKey,
  node: string | string[],
  generation: number,
  items: unknown[],
  o: { iatOffsetS?: number } = {},
): Promise<{ body: string; signature: string }> {
  const body = JSON.stringify({ apiVersion: "v1", kind: "List", items });
  const body_sha256 = createHash("sha256").update(body).digest("base64url");
  return { body, signature: await ownerToken(key, { act: "apply", generation, body_sha256 }, { aud: node, ...o }) };
}

export async function putSet(
  base: URL,
  key: TestKey,
  node: string,
  generation: number,
  items: unknown[],
): Promise<Response> {
  const s = await signedSet(key, node, generation, items);
  return fetch(new URL(`/fleet/nodes/${node}/v1/node/pods`, base), {
    method: "PUT",
    headers: { "content-type": "application/json", "podsync-signature": s.signature },
    body: s.body,
  });
}

/** One set for many nodes (its aud lists them), through PUT /fleet/v1/node/pods. */
export async function putSetMany(
  base: URL,
  key: TestKey,
  nodes: string[],
  generation: number,
  items: unknown[],
): Promise<Response> {
  const s = await signedSet(key, nodes, generation, items);
  return fetch(new URL("/fleet/v1/node/pods", base), {
    method: "PUT",
    headers: { "content-type": "application/json", "podsync-signature": s.signature },
    body: s.body,
  });
}

export async function listNodes(base: URL, key: TestKey, selector?: string): Promise<FleetNode[]> {
  const u = new URL("/fleet/nodes", base);
  if (selector) u.searchParams.set("labelSelector", selector);
  const r = await fetch(u, { headers: { authorization: `Bearer ${await ownerToken(key, { act: "read" })}` } });
  if (!r.ok) throw new Error(`GET /fleet/nodes: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { items: FleetNode[] }).items;
}

export async function audit(
  base: URL,
  key: TestKey,
  node?: string,
): Promise<{ action: string; node: string; detail: string }[]> {
  const u = new URL("/fleet/audit", base);
  if (node) u.searchParams.set("node", node);
  const r = await fetch(u, { headers: { authorization: `Bearer ${await ownerToken(key, { act: "read" })}` } });
  return ((await r.json()) as { items: { action: string; node: string; detail: string }[] }).items;
}

/** A node agent without a runtime: it records the sets it is given and reports the pods the test sets. */
export class SimAgent {
  link!: FleetLink;
  applied: { generation: number; at: number }[] = [];
  logs: Record<string, unknown>[] = [];
  pods: PodSummary[] = [];
  generation = 0;
  constructor(
    readonly name: string,
    readonly identity: FleetIdentity,
  ) {}
}

export async function simAgent(
  base: URL,
  name: string,
  token: string | undefined,
  o: Partial<LinkOptions> & { stateDir?: string } = {},
): Promise<SimAgent> {
  const identity = await FleetIdentity.load(o.stateDir ?? mkdtempSync(join(tmpdir(), `podsync-fleet-${name}-`)));
  const a = new SimAgent(name, identity);
  a.link = startLink({
    url: base.origin,
    node: name,
    identity,
    joinToken: token,
    version: "sim-1",
    apply: async (m: DesiredMessage) => {
      a.applied.push({ generation: m.generation, at: Date.now() });
      a.generation = m.generation;
      return undefined;
    },
    generation: async () => a.generation,
    pods: () => a.pods,
    log: (r) => a.logs.push(r),
    backoff: { baseMs: 200, maxMs: 2000 },
    ...o,
  });
  return a;
}
