// Hardening regressions through a real server (the Harness) in front of the in-process runtime: numbers that
// become deadlines or sizes, $(VAR) expansion, parser errors that could echo secrets, HTTP hygiene.
import fc from "fast-check";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { base64url } from "jose";
import { connect } from "node:net";
import {
  appendFileSync,
  constants,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNode } from "../../src/node.js";
import { FileReplayStore } from "../../src/state/used-jtis.js";
import { expand } from "../../src/container/expansion.js";
import { expandedLength } from "../../src/pod/env-size.js";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import { POD_TERMINATION_GRACE_PERIOD_ANNOTATION } from "../../src/container/labels.js";
import type { FakeServer } from "../support/fake-cri.js";
import { type Harness, ISSUER, NODE, startStack, type Stack } from "../support/http.js";
import { uid } from "../support/pods.js";

let fake: FakeServer;
let h: Harness;
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ timeoutMs: 1500, maxBodyBytes: 64 * 1024 });
  ({ fake, h } = stack);
});
afterAll(() => stack.close());
beforeEach(() => fake.runtime.clearFaults());

const podInput = (id = uid(), spec: Record<string, unknown> = {}, container: Record<string, unknown> = {}) => ({
  metadata: { name: "web", namespace: "default", uid: id },
  spec: {
    terminationGracePeriodSeconds: 2,
    containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "1d"], ...container }],
    ...spec,
  },
});

/** Refused with this status and problem type, and the runtime saw no call at all. */
async function refused(p: Promise<{ status: number; type: string; body: any }>, status: number, slug: string) {
  const before = fake.runtime.totalCalls();
  const r = await p;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.type).toBe("application/problem+json");
  expect(r.body).toMatchObject({ type: `urn:podsync:problem:${slug}`, status });
  expect(fake.runtime.totalCalls()).toBe(before);
  return r.body;
}

/** The server still answers, and still syncs a pod. */
async function stillServes() {
  expect((await h.fetch("/healthz")).status).toBe(200);
  expect((await h.post("/v1/pods/sync", podInput())).status).toBe(200);
}

const del = async (id: string, claims: Record<string, unknown> = {}) =>
  h.fetch(`/v1/pods/${id}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${await h.sign({ act: "delete", uid: id, ...claims })}` },
  });
const podContainers = (id: string) =>
  [...fake.runtime.containers.values()].filter((c) => c.config.labels["io.kubernetes.pod.uid"] === id);

describe("bounds on numbers that become deadlines or sizes", () => {
  it("a spec grace period past podsync's limit, or not an integer, is 400 invalid-pod naming the field", async () => {
    for (const g of [400000000000, 86401, 2.5, -1]) {
      const body = await refused(
        h.post("/v1/pods/sync", podInput(uid(), { terminationGracePeriodSeconds: g })),
        400,
        "invalid-pod",
      );
      expect(body.errors.map((e: any) => e.path)).toEqual(["pod.spec.terminationGracePeriodSeconds"]);
    }
    expect((await h.post("/v1/pods/plan", podInput(uid(), { terminationGracePeriodSeconds: 86400 }))).status).toBe(200);
    await stillServes();
  });

  it("resource quantities that do not fit the runtime's int64 fields are 400 invalid-pod", async () => {
    const body = await refused(
      h.post("/v1/pods/sync", podInput(uid(), {}, { resources: { limits: { memory: "1e300", cpu: "1e300" } } })),
      400,
      "invalid-pod",
    );
    expect(body.errors.map((e: any) => e.path).sort()).toEqual([
      "pod.spec.containers[0].resources.limits.cpu",
      "pod.spec.containers[0].resources.limits.memory",
    ]);
  });

  it("DELETE with a huge or fractional gracePeriodSeconds is 400 before any runtime call; the pod stays; the server still serves", async () => {
    const pod = podInput();
    expect((await h.post("/v1/pods/sync", pod)).status).toBe(200);
    const id = pod.metadata.uid;
    for (const g of [1e300, 400000000000, 2.5, -1, "30"]) {
      const body = await refused(del(id, { gracePeriodSeconds: g }), 400, "bad-request");
      expect(body.errors).toEqual([
        { path: "gracePeriodSeconds", message: expect.stringContaining("whole number of seconds") },
      ]);
    }
    expect(podContainers(id)).toHaveLength(1);
    await stillServes();
    expect((await del(id, { gracePeriodSeconds: 0 })).status).toBe(200);
  });

  it("a container whose grace annotation is huge (made outside podsync) is killed with a bounded deadline, and the server still serves", async () => {
    const pod = podInput();
    expect((await h.post("/v1/pods/sync", pod)).status).toBe(200);
    for (const c of podContainers(pod.metadata.uid))
      c.config.annotations[POD_TERMINATION_GRACE_PERIOD_ANNOTATION] = "400000000000000000000";
    const r = await del(pod.metadata.uid);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(podContainers(pod.metadata.uid)).toHaveLength(0);
    await stillServes();
  });

  it("the CRI client keeps any deadline finite and in range (absurd, infinite or NaN timeouts never crash)", async () => {
    const cri = connectGrpc({ endpoint: fake.endpoint, timeoutMs: 1000 });
    try {
      for (const timeoutMs of [1e300, 4e14, Infinity, Number.NaN])
        expect((await cri.version({}, { timeoutMs })).runtimeName).toBe("fake");
    } finally {
      cri.close();
    }
  });
});

describe("$(VAR) expansion is bounded before any runtime call", () => {
  /** V0 = 8 bytes, Vi = "$(Vi-1)$(Vi-1)": under 1 KB of spec that expands to gigabytes. */
  const doubling = (n: number) => [
    { name: "V0", value: "xxxxxxxx" },
    ...Array.from({ length: n }, (_, i) => ({ name: `V${i + 1}`, value: `$(V${i})$(V${i})` })),
  ];

  it("the doubling pod is 400 invalid-pod naming the env value, with zero runtime calls", async () => {
    const pod = podInput(uid(), {}, { env: doubling(21) });
    expect(JSON.stringify(pod).length).toBeLessThan(1024);
    const body = await refused(h.post("/v1/pods/sync", pod), 400, "invalid-pod");
    // V14 is the first over 128 KiB (8 * 2^14 = 131072 is not over; 8 * 2^15 is).
    expect(body.errors).toEqual([
      {
        path: "pod.spec.containers[0].env[15].value",
        message: expect.stringMatching(/expands .* to 262144 bytes; at most 128 KiB per value/),
      },
      { path: "pod.spec.containers[0].env", message: expect.stringMatching(/at most 1024 KiB per container/) },
    ]);
    // A chain long enough to be astronomically large is refused the same way (nothing is expanded).
    await refused(h.post("/v1/pods/plan", podInput(uid(), {}, { env: doubling(1030) })), 400, "invalid-pod");
  });

  it("command and args count: one argument expanding past 128 KiB is refused; the limits themselves pass", async () => {
    const env = doubling(14); // V14 = 128 KiB exactly
    await refused(h.post("/v1/pods/plan", podInput(uid(), {}, { env, args: ["$(V14)x"] })), 400, "invalid-pod");
    expect((await h.post("/v1/pods/plan", podInput(uid(), {}, { env, args: ["$(V14)"] }))).status).toBe(200);
  });

  it("the size scan agrees with the expansion itself, byte for byte", () => {
    const text = fc
      .array(fc.constantFrom("$", "(", ")", "A", "B", "x", "é", "😀", "\ud800"), { maxLength: 24 })
      .map((a) => a.join(""));
    fc.assert(
      fc.property(text, fc.dictionary(fc.constantFrom("A", "B", "x", "é"), text), (input, defs) => {
        const vars = new Map(Object.entries(defs));
        const lengths = new Map([...vars].map(([k, v]) => [k, new TextEncoder().encode(v).length]));
        expect(expandedLength(input, lengths)).toBe(new TextEncoder().encode(expand(input, vars)).length);
      }),
      { numRuns: 2000 },
    );
  });
});

/** POST a pod body (JSON or YAML text) signed by digest in Podsync-Signature. */
async function postDetached(body: string, type: string, o: { act?: string; jti?: string; signedBody?: string } = {}) {
  const digest = base64url.encode(
    new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(o.signedBody ?? body))),
  );
  const sig = await h.sign({ act: o.act ?? "sync", body_sha256: digest }, o.jti ? { jti: o.jti } : {});
  return h.fetch(`/v1/pods/${o.act ?? "sync"}`, {
    method: "POST",
    headers: { "content-type": type, "podsync-signature": sig },
    body,
  });
}

/** Run fn with everything written to stderr (and process warnings, console.warn/error) captured. */
async function capturingStderr<T>(fn: () => Promise<T>): Promise<{ result: T; stderr: string }> {
  const out: string[] = [];
  const spies = [
    vi.spyOn(process.stderr, "write").mockImplementation(((c: unknown) => (out.push(String(c)), true)) as never),
    vi
      .spyOn(process, "emitWarning")
      .mockImplementation(((w: unknown) => void out.push(String((w as Error)?.message ?? w))) as never),
    vi.spyOn(console, "warn").mockImplementation((...a: unknown[]) => void out.push(a.join(" "))),
    vi.spyOn(console, "error").mockImplementation((...a: unknown[]) => void out.push(a.join(" "))),
  ];
  try {
    const result = await fn();
    await new Promise((r) => setImmediate(r)); // process warnings are printed on a later tick
    return { result, stderr: out.join("\n") };
  } finally {
    for (const s of spies) s.mockRestore();
  }
}

describe("parser errors never echo the body (secrets stay out of responses, logs and stderr)", () => {
  const yamlPod = (secretLine: string) =>
    [
      `metadata: { name: web, uid: ${uid()} }`,
      "spec:",
      "  imagePullSecrets:",
      "    - auths:",
      "        registry.example.com:",
      "          username: bob",
      `          ${secretLine}`,
      "  containers:",
      "    - { name: main, image: localhost/busybox:1 }",
    ].join("\n");

  async function expectNoLeak(body: string, type: string, secret: string, slug: string) {
    const n = h.logs.length;
    const { result: r, stderr } = await capturingStderr(() => refused(postDetached(body, type), 400, slug));
    expect(JSON.stringify(r)).not.toContain(secret);
    expect(h.logs.length).toBe(n + 1);
    expect(JSON.stringify(h.logs.slice(n))).not.toContain(secret);
    expect(stderr).not.toContain(secret);
    return r;
  }

  it("a YAML syntax error next to a password: 400 bad-yaml with line and column only", async () => {
    const r = await expectNoLeak(
      yamlPod('password: "hunter2-yaml-secret" trailing'),
      "application/yaml",
      "hunter2-yaml-secret",
      "bad-yaml",
    );
    expect(r.detail).toMatch(/^the body is not valid YAML: [a-z ]+ at line 7, column \d+$/);
    const nested = await expectNoLeak(
      yamlPod("password: hunter2-nested-secret: x"),
      "application/yaml",
      "hunter2-nested-secret",
      "bad-yaml",
    );
    expect(nested.detail).toMatch(/at line 7, column \d+$/);
  });

  it("an unknown YAML tag is a 400 refusal, not a warning on stderr and a silently changed value", async () => {
    const r = await expectNoLeak(
      yamlPod("password: !vault hunter2-tag-secret"),
      "application/yaml",
      "hunter2-tag-secret",
      "bad-yaml",
    );
    expect(r.detail).toMatch(/tag resolve failed at line 7, column \d+/);
  });

  it("a JSON syntax error next to a password: 400 bad-json without V8's quote of the input", async () => {
    const r = await expectNoLeak('{"password": s3cr3t}', "application/json", "s3cr3t", "bad-json");
    expect(r.detail).toBe("the body is not valid JSON: unexpected token");
    const pos = await expectNoLeak('{"a": 1, "password": "s3cr3t" x}', "application/json", "s3cr3t", "bad-json");
    expect(pos.detail).toBe("the body is not valid JSON: unexpected token at line 1, column 31");
  });
});

/** Bounded polling for something the server does after the client has gone (no timed assertion). */
async function eventually<T>(what: string, fn: () => T | undefined): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const v = fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`never happened: ${what}`);
}

/** A raw HTTP/1.1 connection: write bytes, read everything the server sends until it closes or `until` holds. */
function rawSocket() {
  const { port } = new URL(h.url);
  const sock = connect(Number(port), "127.0.0.1");
  let data = "";
  let closed = false;
  sock.on("data", (d) => (data += d.toString("latin1")));
  sock.on("error", () => undefined);
  sock.on("close", () => (closed = true));
  return {
    sock,
    write: (s: string) => new Promise<void>((r) => sock.write(s, () => r())),
    waitFor: (what: string, until: (data: string, closed: boolean) => boolean) =>
      eventually(what, () => (until(data, closed) ? { data, closed } : undefined)),
  };
}

/** Parsed responses in a raw byte string (content-length bodies). */
function responses(raw: string): { status: number; headers: Record<string, string>; body: string }[] {
  const out = [];
  let rest = raw;
  for (;;) {
    const end = rest.indexOf("\r\n\r\n");
    if (!rest.startsWith("HTTP/1.1 ") || end < 0) return out;
    const [statusLine, ...lines] = rest.slice(0, end).split("\r\n");
    const headers = Object.fromEntries(
      lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
    );
    const len = Number(headers["content-length"] ?? 0);
    if (rest.length < end + 4 + len) return out;
    out.push({ status: Number(statusLine!.split(" ")[1]), headers, body: rest.slice(end + 4, end + 4 + len) });
    rest = rest.slice(end + 4 + len);
  }
}

describe("HTTP hygiene", () => {
  it("a client that aborts mid-body is logged as a closed request, not a 500 with a stack", async () => {
    const n = h.logs.length;
    const c = rawSocket();
    await c.write(
      "POST /v1/pods/sync HTTP/1.1\r\nHost: x\r\nContent-Type: application/jose\r\nContent-Length: 5000\r\n\r\neyJhbGciOi",
    );
    await eventually("the server to start reading", () => (fake.runtime.totalCalls() >= 0 ? true : undefined));
    c.sock.destroy();
    const line = await eventually("the request's log line", () =>
      h.logs.slice(n).find((l) => l.route === "/v1/pods/sync"),
    );
    expect(line.status).toBe(400);
    expect(line.error).toMatch(/client closed the request/);
    expect(line.error).not.toMatch(/\bat .*:\d+/);
    expect((await h.fetch("/healthz")).status).toBe(200);
  });

  it("a 413 on a chunked body closes the connection properly: the next request on that socket is never lost", async () => {
    const c = rawSocket();
    let req =
      "POST /v1/pods/sync HTTP/1.1\r\nHost: x\r\nContent-Type: application/jose\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (let i = 0; i < 70; i++) req += `400\r\n${"y".repeat(1024)}\r\n`;
    // The client is still sending (no last chunk yet) when the 413 comes back.
    await c.write(req);
    const first = await c.waitFor("the 413", (d) => responses(d).length >= 1);
    const [tooLarge] = responses(first.data);
    expect(tooLarge!.status).toBe(413);
    expect(JSON.parse(tooLarge!.body)).toMatchObject({ type: "urn:podsync:problem:body-too-large" });
    if (tooLarge!.headers["connection"]?.toLowerCase() === "close") {
      await c.waitFor("the server to close", (_d, closed) => closed);
    } else {
      // A slow client: the rest of its upload comes later than the server's drain allowance (500 ms in
      // @hono/node-server), and then its next request on the kept-alive socket.
      await new Promise((r) => setTimeout(r, 800));
      await c.write(
        `${`${"z".repeat(1024)}\r\n`.replace(/^/, "400\r\n")}0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`,
      );
      const second = await c.waitFor(
        "the second answer, or a close",
        (d, closed) => closed || responses(d).length >= 2,
      );
      expect(responses(second.data).map((r) => r.status)).toEqual([413, 200]);
    }
    c.sock.destroy();
  });

  it("an unsigned JSON pod is 401 missing, like an unsigned YAML pod", async () => {
    const pod = JSON.stringify(podInput());
    const json = await refused(
      h.fetch("/v1/pods/sync", { method: "POST", headers: { "content-type": "application/json" }, body: pod }),
      401,
      "unauthorized",
    );
    expect(json.reason).toBe("missing");
    const yaml = await refused(
      h.fetch("/v1/pods/sync", { method: "POST", headers: { "content-type": "application/yaml" }, body: pod }),
      401,
      "unauthorized",
    );
    expect(yaml.reason).toBe("missing");
    // A wrapper that is there but malformed is still a bad request.
    await refused(
      h.fetch("/v1/pods/sync", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jws: 5 }),
      }),
      400,
      "bad-request",
    );
  });

  it("the status route reports the image as the spec named it, and the image id as imageRef (containerd 1.6 shapes)", async () => {
    // A second tag of the same image: the runtime's own answer (its first tag) would name the wrong one.
    fake.runtime.images.set("localhost/alias:1", "sha256:busybox1");
    const pod = podInput(uid(), {}, { image: "localhost/alias:1" });
    expect((await h.post("/v1/pods/sync", pod)).status).toBe(200);
    const id = pod.metadata.uid;
    const st = await h.fetch(`/v1/pods/${id}/status`, {
      headers: { authorization: `Bearer ${await h.sign({ act: "status", uid: id })}` },
    });
    expect(st.body.status.containers).toMatchObject([
      { name: "main", image: "localhost/alias:1", imageRef: "sha256:busybox1" },
    ]);
    // The sync's own read-back (the CRI view in `runtime`, the v1 status in `status`) says the same.
    const again = await h.post("/v1/pods/sync", pod);
    expect(again.body.runtime.containers).toMatchObject([{ image: "localhost/alias:1", imageRef: "sha256:busybox1" }]);
    expect(again.body.status.containerStatuses).toMatchObject([{ image: "localhost/alias:1" }]);
  });
});

describe("a used token never acts twice, not even after a restart", () => {
  /** The Node entry (startNode) on a loopback port, in front of the same in-process runtime and keys. */
  const nodeEnv = (stateDir: string) => ({
    PODSYNC_CRI_ENDPOINT: fake.endpoint,
    PODSYNC_SERVICE_DATAPLANE: "off",
    PODSYNC_PORT: "0",
    PODSYNC_NODE_NAME: NODE,
    PODSYNC_JWKS: JSON.stringify({ keys: h.keys.map((k) => k.publicJwk) }),
    PODSYNC_ISSUERS: ISSUER,
    PODSYNC_STATE_DIR: stateDir,
    // The node agent's loop relists once at start (syncing the desired pods a restart finds), then not for an
    // hour: a refused request must be the only thing near the runtime while it is measured.
    PODSYNC_RELIST_INTERVAL_MS: "3600000",
    // Nor the runtime's event stream (its Version and GetContainerEvents, and their retries).
    PODSYNC_RUNTIME_EVENTS: "off",
  });
  /** Until the runtime has seen no call for a while (the loop's start-up sync is done). */
  const quiet = async () => {
    for (let last = -1; last !== fake.runtime.totalCalls(); ) {
      last = fake.runtime.totalCalls();
      await new Promise((r) => setTimeout(r, 300));
    }
  };
  const postTo = async (url: string, token: string) => {
    const r = await fetch(`${url}/v1/pods/sync`, {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: token,
    });
    return { status: r.status, type: r.headers.get("content-type") ?? "", body: (await r.json()) as any };
  };

  it("restart the Node server: the same token is 409 replayed; the state files are private and hold no raw ids", async () => {
    const stateDir = join(mkdtempSync(join(tmpdir(), "podsync-state-")), "state");
    const jti = `persist-${uid()}`;
    const token = await h.sign({ act: "sync", pod: podInput() }, { jti });
    let node = await startNode(nodeEnv(stateDir), true);
    try {
      expect((await postTo(node.url, token)).status).toBe(200);
      expect((await postTo(node.url, token)).status).toBe(409);
    } finally {
      await node.close();
    }
    node = await startNode(nodeEnv(stateDir), true);
    try {
      await quiet();
      const again = await refused(postTo(node.url, token), 409, "replayed");
      expect(again.reason).toBe("replayed");
      expect((await postTo(node.url, await h.sign({ act: "sync", pod: podInput() }))).status).toBe(200);
    } finally {
      await node.close();
    }
    expect(statSync(join(stateDir, "jti")).mode & 0o777).toBe(0o700);
    expect(statSync(join(stateDir, "jti", "used.log")).mode & 0o777).toBe(0o600);
    const log = readFileSync(join(stateDir, "jti", "used.log"), "utf8");
    expect(log.trim().split("\n")).toHaveLength(2);
    expect(log).not.toContain(jti);
  });

  it("a state directory that cannot be written: 503 state-unavailable, nothing acts, the server still serves", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "podsync-state-")), "not-a-dir");
    writeFileSync(file, "");
    const node = await startNode(nodeEnv(join(file, "state")), true);
    try {
      const body = await refused(
        postTo(node.url, await h.sign({ act: "sync", pod: podInput() })),
        503,
        "state-unavailable",
      );
      expect(body.detail).toMatch(/ENOTDIR/);
      expect((await fetch(`${node.url}/healthz`)).status).toBe(200);
    } finally {
      await node.close();
    }
  });

  it("detached signature: a wrong body does not spend the jti, so the genuine body with that token still acts", async () => {
    const genuine = JSON.stringify(podInput());
    const jti = `detached-${uid()}`;
    const wrong = await refused(
      postDetached(genuine.replace("sleep", "sleeq"), "application/json", { jti, signedBody: genuine }),
      401,
      "unauthorized",
    );
    expect(wrong.reason).toBe("bad-signature");
    expect((await postDetached(genuine, "application/json", { jti })).status).toBe(200);
    await refused(postDetached(genuine, "application/json", { jti }), 409, "replayed");
  });

  it("the log survives a torn last line, and is compacted once dead lines outnumber live ones", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "podsync-jti-")), "jti");
    let now = 1_000;
    const a = new FileReplayStore(dir, { now: () => now });
    expect(await a.claim("iss\u0000one", 50_000)).toBe(true);
    await a.close();
    appendFileSync(join(dir, "used.log"), "k7Tb9"); // a crash mid-write
    const b = new FileReplayStore(dir, { now: () => now });
    expect(await b.claim("iss\u0000one", 50_000)).toBe(false);
    expect(await b.claim("iss\u0000two", 50_000)).toBe(true);
    // Claims arriving together share writes; once they have expired, the next claim's flush rewrites the log.
    const many = await Promise.all(Array.from({ length: 1500 }, (_, i) => b.claim(`iss\u0000m${i}`, 20_000)));
    expect(many.every(Boolean)).toBe(true);
    now = 30_000;
    expect(await b.claim("iss\u0000three", 90_000)).toBe(true);
    await b.close();
    expect(readFileSync(join(dir, "used.log"), "utf8").trim().split("\n")).toHaveLength(3);
    const c = new FileReplayStore(dir, { now: () => now });
    for (const k of ["one", "two", "three"]) expect(await c.claim(`iss\u0000${k}`, 90_000)).toBe(false);
    await c.close();
  });

  it("a claim is durable when granted: the log is open O_DSYNC (each write on disk when it returns), after a rewrite too", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "podsync-jti-")), "jti");
    let now = 1_000;
    const store = new FileReplayStore(dir, { now: () => now });
    /** The flags of this process's open descriptions of the log, from /proc (Linux). */
    const logFlags = () =>
      readdirSync("/proc/self/fd").flatMap((fd) => {
        try {
          if (readlinkSync(`/proc/self/fd/${fd}`) !== join(dir, "used.log")) return [];
          return [parseInt(/^flags:\s+(\d+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"))![1]!, 8)];
        } catch {
          return [];
        }
      });
    expect(await store.claim("iss\u0000a", 20_000)).toBe(true);
    expect(logFlags().map((f) => (f & constants.O_DSYNC) !== 0)).toEqual([true]);
    // Compaction renames a new log over it and opens that one the same way.
    await Promise.all(Array.from({ length: 1100 }, (_, i) => store.claim(`iss\u0000m${i}`, 20_000)));
    now = 30_000;
    expect(await store.claim("iss\u0000b", 90_000)).toBe(true);
    expect(await store.claim("iss\u0000c", 90_000)).toBe(true); // flushed after the rewrite that "b"'s batch began
    expect(readFileSync(join(dir, "used.log"), "utf8").trim().split("\n").length).toBeLessThan(10);
    expect(logFlags().map((f) => (f & constants.O_DSYNC) !== 0)).toEqual([true]);
    await store.close();
  });
});
