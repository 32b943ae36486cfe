// The HTTP function served for real (@hono/node-server on a loopback port) in front of a CRI runtime,
// with test keys and a signer.
import { serve, type ServerType } from "@hono/node-server";
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from "jose";
import { createApp, type AppOptions } from "../../src/http/app.js";
import type { RequestLog } from "../../src/http/request-log.js";
import { createVerifier, type VerifierOptions } from "../../src/auth/verify.js";
import { MemoryReplayStore } from "../../src/auth/replay.js";
import type { CriClient } from "../../src/cri/client.js";
import { createPodRuntime, type PodRuntimeOptions } from "../../src/kubelet/pod-runtime.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import { startFakeCri, type FakeServer } from "./fake-cri.js";

export const NODE = "node-a";
export const ISSUER = "fleet-controller";

export interface TestKey {
  kid: string;
  alg: "EdDSA" | "ES256";
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export async function makeKey(alg: "EdDSA" | "ES256", kid: string): Promise<TestKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg === "EdDSA" ? "Ed25519" : "ES256", { extractable: true });
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" } };
}

export interface SignOptions {
  key?: TestKey;
  iss?: string;
  aud?: string | string[];
  /** seconds relative to now */
  iat?: number;
  exp?: number;
  nbf?: number;
  jti?: string | null;
  kid?: string;
}

let jtiSeq = 0;

export class Harness {
  server!: ServerType;
  url = "";
  logs: RequestLog[] = [];
  constructor(
    readonly keys: TestKey[],
    readonly cri: CriClient,
  ) {}

  static async start(
    cri: CriClient,
    extra: Partial<AppOptions> = {},
    verifier: Partial<VerifierOptions> = {},
    runtime: PodRuntimeOptions = {},
  ): Promise<Harness> {
    const keys = [await makeKey("EdDSA", "ed-1"), await makeKey("ES256", "es-1")];
    const h = new Harness(keys, cri);
    const app = createApp({
      runtime: createPodRuntime(cri, { pullBackOff: new MemoryPullBackOff(), ...runtime }),
      nodeName: NODE,
      verifier: createVerifier({
        keys: { jwks: { keys: keys.map((k) => k.publicJwk) } },
        issuers: [ISSUER],
        audience: [NODE, "node-a-id"],
        replay: new MemoryReplayStore(),
        ...verifier,
      }),
      log: (r) => h.logs.push(r),
      ...extra,
    });
    await new Promise<void>((res) => {
      h.server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => res());
    });
    const addr = h.server.address();
    h.url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
    return h;
  }

  async sign(claims: Record<string, unknown>, o: SignOptions = {}): Promise<string> {
    const key = o.key ?? this.keys[0]!;
    const now = Math.floor(Date.now() / 1000);
    const jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: key.alg, kid: o.kid ?? key.kid })
      .setIssuer(o.iss ?? ISSUER)
      .setAudience(o.aud ?? NODE)
      .setIssuedAt(now + (o.iat ?? 0))
      .setExpirationTime(now + (o.exp ?? 60));
    if (o.nbf !== undefined) jwt.setNotBefore(now + o.nbf);
    if (o.jti !== null) jwt.setJti(o.jti ?? `jti-${process.pid}-${++jtiSeq}`);
    return jwt.sign(key.privateKey);
  }

  /** POST a signed pod (the token is the body). */
  async post(path: "/v1/pods/sync" | "/v1/pods/plan", pod: unknown, o: SignOptions & { act?: string } = {}) {
    const token = await this.sign({ act: o.act ?? path.split("/").pop(), pod }, o);
    return this.fetch(path, { method: "POST", headers: { "content-type": "application/jose" }, body: token });
  }

  async fetch(path: string, init: RequestInit = {}) {
    const r = await fetch(this.url + path, init);
    const text = await r.text();
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    return { status: r.status, type: r.headers.get("content-type") ?? "", body };
  }

  close(): Promise<void> {
    return new Promise((res) => this.server.close(() => res()));
  }
}

/** The in-process runtime, a client for it, and the function served in front of it. */
export interface Stack {
  fake: FakeServer;
  cri: CriClient;
  h: Harness;
  close(): Promise<void>;
}

export async function startStack(o: { timeoutMs: number; maxBodyBytes: number }): Promise<Stack> {
  const fake = await startFakeCri();
  const cri = connectGrpc({ endpoint: fake.endpoint, timeoutMs: o.timeoutMs });
  const h = await Harness.start(cri, { maxBodyBytes: o.maxBodyBytes });
  return {
    fake,
    cri,
    h,
    async close() {
      await h.close();
      cri.close();
      await fake.close();
    },
  };
}
