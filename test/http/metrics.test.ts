// GET /metrics: the Node server (startNode, with the in-process CRI runtime) serves Prometheus text with the
// node agent's series: syncs by trigger and result, CRI calls by method and gRPC code, relists, pods by
// phase, generation. Who may read it: loopback peers without a token in the default mode, others only with a
// Bearer token whose act is "metrics"; `token` asks everyone; `off` serves nothing.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importJWK, SignJWT, type JWK } from "jose";
import { startNode, type Running } from "../../src/node.js";
import { isLoopbackAddress } from "../../src/http/handlers/metrics.js";
import { Harness } from "../support/http.js";
import type { FakeServer } from "../support/fake-cri.js";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import { pod } from "../support/pods.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

let fake: FakeServer;
const suite = useFakeCri();
beforeAll(async () => {
  ({ fake } = suite);
});

async function node(extra: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "podsync-metrics-"));
  const env = {
    PODSYNC_PORT: "0",
    PODSYNC_DEV_DIR: dir,
    PODSYNC_STATE_DIR: join(dir, "state"),
    PODSYNC_CRI_ENDPOINT: fake.endpoint,
    PODSYNC_SERVICE_DATAPLANE: "off",
    PODSYNC_NODE_NAME: "metrics-node",
    PODSYNC_RELIST_INTERVAL_MS: "100",
    PODSYNC_RUNTIME_EVENTS: "off",
    ...extra,
  };
  const r = await startNode(env, true);
  const key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { iss: string };
  const sign = async (claims: Record<string, unknown>) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "EdDSA", kid: key.kid! })
      .setIssuer(key.iss)
      .setAudience("metrics-node")
      .setIssuedAt()
      .setExpirationTime("1m")
      .setJti(`m-${Math.random()}`)
      .sign(await importJWK(key, "EdDSA"));
  return { r, sign };
}

/** The value of one series, e.g. `podsync_syncs_total{trigger="request",result="ok"}`. */
const value = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe("GET /metrics on the Node server", () => {
  let n: { r: Running; sign: (c: Record<string, unknown>) => Promise<string> };
  beforeAll(async () => {
    n = await node();
  });
  afterAll(async () => {
    await n?.r.close();
  });

  it("serves loopback without a token: syncs by trigger, CRI calls by method and code, relists, pods, generation", async () => {
    const p = pod();
    const token = await n.sign({ act: "sync", pod: p });
    const s = await fetch(`${n.r.url}/v1/pods/sync`, {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: token,
    });
    expect(s.status).toBe(200);
    // A relist has run since (every 100 ms here: the event stream is off, so the relist keeps its interval).
    await new Promise((r) => setTimeout(r, 300));
    const res = await fetch(`${n.r.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(value(text, 'podsync_syncs_total{trigger="request",result="ok"}')).toBe(1);
    expect(value(text, 'podsync_sync_duration_seconds_count{trigger="request"}')).toBe(1);
    expect(value(text, 'podsync_cri_calls_total{method="runPodSandbox",code="OK"}')).toBe(1);
    expect(value(text, 'podsync_cri_calls_total{method="listPodSandbox",code="OK"}')).toBeGreaterThanOrEqual(2);
    expect(value(text, "podsync_relist_duration_seconds_count")).toBeGreaterThanOrEqual(1);
    expect(value(text, "podsync_relist_lag_seconds_count")).toBeGreaterThanOrEqual(1);
    expect(value(text, "podsync_desired_generation")).toBe(0);
    // The accepted sync stored the pod in the desired state: the loop counts it by phase, and it is no orphan.
    expect(value(text, 'podsync_pods{phase="Running"}')).toBe(1);
    expect(value(text, 'podsync_pods{phase="Pending"}')).toBe(0);
    expect(value(text, "podsync_orphan_pods")).toBe(0);
    expect(value(text, "podsync_loop_container_restarts_total")).toBe(0);
    expect(text).toContain("process_cpu_seconds_total");
    // A failing call is counted under its gRPC code; the relist it broke, as a failure.
    fake.runtime.fault("ListContainers", { kind: "error", code: 14, times: 1 });
    await expect
      .poll(
        async () =>
          value(
            await (await fetch(`${n.r.url}/metrics`)).text(),
            'podsync_cri_calls_total{method="listContainers",code="UNAVAILABLE"}',
          ),
        { timeout: 3000 },
      )
      .toBe(1);
    expect(value(await (await fetch(`${n.r.url}/metrics`)).text(), "podsync_relist_failures_total")).toBe(1);
    const del = await fetch(`${n.r.url}/v1/pods/${p.metadata.uid}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await n.sign({ act: "delete", uid: p.metadata.uid })}` },
    });
    expect(del.status).toBe(200);
  });
});

describe("who may read /metrics", () => {
  it("PODSYNC_METRICS=token: a Bearer token with act metrics, even on loopback; the token is not spent", async () => {
    const n = await node({ PODSYNC_METRICS: "token" });
    try {
      const none = await fetch(`${n.r.url}/metrics`);
      expect(none.status).toBe(401);
      expect(none.headers.get("content-type")).toBe("application/problem+json");
      const wrong = await fetch(`${n.r.url}/metrics`, {
        headers: { authorization: `Bearer ${await n.sign({ act: "status" })}` },
      });
      expect(wrong.status).toBe(401);
      const token = await n.sign({ act: "metrics" });
      for (let i = 0; i < 2; i++)
        expect((await fetch(`${n.r.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    } finally {
      await n.r.close();
    }
  });

  it("PODSYNC_METRICS=off: not served (404 problem)", async () => {
    const n = await node({ PODSYNC_METRICS: "off" });
    try {
      const r = await fetch(`${n.r.url}/metrics`);
      expect(r.status).toBe(404);
      expect(((await r.json()) as { type: string }).type).toBe("urn:podsync:problem:not-found");
    } finally {
      await n.r.close();
    }
  });

  it("loopback mode: a peer that is not loopback needs the token", async () => {
    const cri = connectGrpc({ endpoint: fake.endpoint, timeoutMs: 2000 });
    let peer = "10.1.2.3";
    const h = await Harness.start(cri, {
      metrics: {
        mode: "loopback",
        render: async () => "up 1\n",
        contentType: "text/plain; version=0.0.4",
        peerAddress: () => peer,
      },
    });
    try {
      expect((await h.fetch("/metrics")).status).toBe(401);
      expect(
        (await h.fetch("/metrics", { headers: { authorization: `Bearer ${await h.sign({ act: "metrics" })}` } })).body,
      ).toBe("up 1\n");
      expect(
        (
          await h.fetch("/metrics", {
            headers: { authorization: `Bearer ${await h.sign({ act: "metrics", uid: "x" })}` },
          })
        ).status,
      ).toBe(401);
      peer = "::ffff:127.0.0.1";
      expect((await h.fetch("/metrics")).status).toBe(200);
    } finally {
      await h.close();
      cri.close();
    }
  });

  it("isLoopbackAddress", () => {
    for (const a of ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"]) expect(isLoopbackAddress(a)).toBe(true);
    for (const a of [undefined, "", "10.0.0.1", "::ffff:10.0.0.1", "fe80::1", "128.0.0.1", "1270.0.0.1"])
      expect(isLoopbackAddress(a)).toBe(false);
  });
});
