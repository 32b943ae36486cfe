// logs and exec through the real HTTP server on a REAL containerd: the CRI log files containerd writes,
// read with kubectl's parameters; ExecSync into a running container with the output bounded.
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { nodeLogFiles } from "../../src/host/logs/log-files.js";
import { exportJWK } from "jose";
import { Harness, ISSUER } from "../support/http.js";
import { uid, deleteAll } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

let cri: CriClient;
let h: Harness;
let noExec: Harness;
const made: string[] = [];
const node = { ...defaultNodeConfig(), podLogsDir: mkdtempSync(join(tmpdir(), "podsync-logs-e2e-")) };

const podInput = (name: string, command: string[], restartPolicy = "Always") => {
  const id = uid(name);
  made.push(id);
  return {
    metadata: { name, namespace: "default", uid: id },
    spec: {
      restartPolicy,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "main", image: "localhost/busybox:1", imagePullPolicy: "Never", command }],
    },
  };
};

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function logs(id: string, query = "", harness = h) {
  const token = await harness.sign({ act: "logs", uid: id });
  return harness.fetch(`/v1/pods/${id}/logs${query ? `?${query}` : ""}`, {
    headers: { authorization: `Bearer ${token}` },
  });
}

async function exec(id: string, claims: Record<string, unknown>, harness = h) {
  const token = await harness.sign({ act: "exec", uid: id, ...claims });
  return harness.fetch(`/v1/pods/${id}/exec`, {
    method: "POST",
    headers: { "content-type": "application/jose" },
    body: token,
  });
}

async function sync(p: unknown) {
  const r = await h.post("/v1/pods/sync", p);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

describe.skipIf(skip)("logs and exec on real containerd", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 20_000 });
    h = await Harness.start(cri, { allowExec: true, execMaxOutputBytes: 1024 }, {}, { node, logFiles: nodeLogFiles });
    noExec = await Harness.start(cri, {}, {}, { node, logFiles: nodeLogFiles });
  });
  afterAll(async () => {
    const rt = createPodRuntime(cri);
    await deleteAll(rt, made, 1);
    await h?.close();
    await noExec?.close();
    cri?.close();
  });

  it("whole, tailLines, timestamps, sinceTime, limitBytes; stdout and stderr both; text/plain", async () => {
    const p = podInput("talker", [
      "sh",
      "-c",
      "echo out1; echo err1 >&2; sleep 0.3; echo out2; sleep 0.5; echo out3; exec sleep 3600",
    ]);
    await sync(p);
    const id = p.metadata.uid;
    const all = await until("out3 in the log", async () => {
      const r = await logs(id);
      return r.status === 200 && String(r.body).includes("out3") && r;
    });
    expect(all.type).toBe("text/plain; charset=utf-8");
    expect(String(all.body).split("\n").sort()).toEqual(["", "err1", "out1", "out2", "out3"]);
    expect((await logs(id, "tailLines=1")).body).toBe("out3\n");
    expect(String((await logs(id, "tailLines=2&timestamps=true")).body)).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}(Z|[+-]\d\d:\d\d) out2\n\S+ out3\n$/,
    );
    expect((await logs(id, `sinceTime=${new Date(Date.now() + 3_600_000).toISOString()}`)).body).toBe("");
    expect((await logs(id, "limitBytes=3&tailLines=1")).body).toBe("out");
    expect((await logs(id, "container=main&tailLines=1")).body).toBe("out3\n");
  });

  it("bad input: unknown container is 404 with the names, no previous is 400 in kubelet's words, bad numbers are 400", async () => {
    const p = podInput("quiet", ["sleep", "3600"]);
    await sync(p);
    const id = p.metadata.uid;
    const unknown = await logs(id, "container=nope");
    expect(unknown).toMatchObject({
      status: 404,
      type: "application/problem+json",
      body: { type: "urn:podsync:problem:container-not-found", containers: ["main"] },
    });
    const prev = await logs(id, "previous=true");
    expect(prev.status).toBe(400);
    expect(prev.body.detail).toBe(`previous terminated container "main" in pod "quiet" not found`);
    for (const q of [
      "tailLines=-1",
      "tailLines=1e99",
      "limitBytes=0",
      "sinceSeconds=0",
      "sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z",
      "follow=maybe",
      "extra=1",
    ]) {
      const r = await logs(id, q);
      expect(r.status, q).toBe(400);
      expect(r.body.errors.length, q).toBeGreaterThan(0);
    }
    expect((await logs(uid("nobody"))).status).toBe(404);
  });

  it("previous: the log of the instance before a restart", async () => {
    const p = podInput("restarter", ["sh", "-c", "echo run-$(cat /proc/sys/kernel/random/uuid); sleep 0.3; exit 1"]);
    await sync(p);
    const id = p.metadata.uid;
    const first = await until("the first run's line", async () => {
      const r = await logs(id);
      return r.status === 200 && /run-\S+/.test(String(r.body)) && String(r.body).trim();
    });
    // Restart it once (no back-off on the first restart), then wait for the second run's line.
    await until("the first instance to exit", async () =>
      (await createPodRuntime(cri).status(id))?.status.containerStatuses.some((c) => c.state === "exited"),
    );
    await sync(p);
    const second = await until("the second run's line", async () => {
      const r = await logs(id);
      const t = String(r.body).trim();
      return r.status === 200 && /run-\S+/.test(t) && t !== first && t;
    });
    expect((await logs(id, "previous=true")).body).toBe(`${first}\n`);
    expect(second).not.toBe(first);
  });

  it("follow streams lines as they are written and ends when the container exits", async () => {
    const p = podInput(
      "ticker",
      ["sh", "-c", "sleep 0.5; for i in 1 2 3 4 5; do echo tick $i; sleep 0.2; done"],
      "Never",
    );
    await sync(p);
    const id = p.metadata.uid;
    const token = await h.sign({ act: "logs", uid: id });
    const r = await until("the container's log file", async () => {
      const res = await fetch(`${h.url}/v1/pods/${id}/logs?follow=true`, {
        headers: { authorization: `Bearer ${token}` },
      });
      if (res.status === 200) return res;
      await res.body?.cancel();
      return undefined;
    });
    const reader = r.body!.getReader();
    const seen: number[] = [];
    let text = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
      seen.push(text.split("\n").filter(Boolean).length);
    }
    expect(text).toBe("tick 1\ntick 2\ntick 3\ntick 4\ntick 5\n");
    // Lines arrived over several chunks, not in one piece at the end.
    expect(new Set(seen).size).toBeGreaterThan(1);
  });

  it("exec: output and exit code; bounded output with a flag; binary as base64; off unless enabled; one token, one command", async () => {
    const p = podInput("shell", ["sleep", "3600"]);
    await sync(p);
    const id = p.metadata.uid;
    const r = await exec(id, { command: ["sh", "-c", "echo hello; echo oops >&2; exit 3"] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      container: "main",
      exitCode: 3,
      stdout: { data: "hello\n", encoding: "utf-8", truncated: false },
      stderr: { data: "oops\n", truncated: false },
    });
    const big = await exec(id, {
      command: ["sh", "-c", "i=0; while [ $i -lt 300 ]; do echo 0123456789; i=$((i+1)); done"],
    });
    expect(big.body.stdout).toMatchObject({ truncated: true, bytes: 3300, encoding: "utf-8" });
    expect(big.body.stdout.data).toHaveLength(1024);
    const bin = await exec(id, { command: ["sh", "-c", "echo -ne '\\xff\\xfe\\x00'"] });
    expect(bin.body.stdout).toEqual({
      data: Buffer.from([0xff, 0xfe, 0]).toString("base64"),
      encoding: "base64",
      truncated: false,
      bytes: 3,
    });
    // The token is the whole request: nothing beside it can change the command.
    const lsToken = await h.sign({ act: "exec", uid: id, command: ["ls"] });
    const smuggled = await h.fetch(`/v1/pods/${id}/exec`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jws: lsToken, command: ["sh"] }),
    });
    expect(smuggled.status).toBe(400);
    const [hdr, , sig] = lsToken.split(".");
    const forged = `${hdr}.${Buffer.from(JSON.stringify({ act: "exec", uid: id, command: ["sh"] })).toString("base64url")}.${sig}`;
    expect(
      (
        await h.fetch(`/v1/pods/${id}/exec`, {
          method: "POST",
          headers: { "content-type": "application/jose" },
          body: forged,
        })
      ).status,
    ).toBe(401);
    const once = await h.fetch(`/v1/pods/${id}/exec`, {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: lsToken,
    });
    expect(once.status).toBe(200);
    expect(
      (
        await h.fetch(`/v1/pods/${id}/exec`, {
          method: "POST",
          headers: { "content-type": "application/jose" },
          body: lsToken,
        })
      ).body,
    ).toMatchObject({ status: 409, type: "urn:podsync:problem:replayed" });
    // The log line names who ran what as a hash, never the argv or the output.
    const line = h.logs.filter((l) => l.route === "/v1/pods/:uid/exec" && l.status === 200).at(-1)!;
    expect(line).toMatchObject({ iss: "fleet-controller", commandSha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(JSON.stringify(h.logs)).not.toMatch(/hello|oops|0123456789/);
    // Bad claims and a disabled node.
    expect((await exec(id, { command: [] })).status).toBe(400);
    expect((await exec(id, { command: ["ls"], timeoutSeconds: 1e9 })).status).toBe(400);
    expect((await exec(id, { command: ["ls"], container: "nope" })).status).toBe(404);
    expect(await exec(id, { command: ["ls"] }, noExec)).toMatchObject({
      status: 403,
      body: { type: "urn:podsync:problem:exec-disabled" },
    });
  });

  it("the CLI: podsync logs (tail) and podsync exec (output, and its exit code as the CLI's)", async () => {
    const p = podInput("cli", ["sh", "-c", "echo first; echo last; exec sleep 3600"]);
    await sync(p);
    const id = p.metadata.uid;
    await until("the log", async () => String((await logs(id)).body).includes("last"));
    const key = h.keys[0]!;
    const keyFile = join(mkdtempSync(join(tmpdir(), "podsync-cli-key-")), "key.json");
    writeFileSync(
      keyFile,
      JSON.stringify({ ...(await exportJWK(key.privateKey)), kid: key.kid, alg: key.alg, iss: ISSUER }),
    );
    const cli = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((res) =>
        execFile(
          process.execPath,
          ["bin/podsync.mjs", "--url", h.url, "--key", keyFile, ...args],
          (e, stdout, stderr) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
      );
    expect(await cli("logs", id, "--tail", "1")).toMatchObject({ code: 0, stdout: "last\n" });
    expect(await cli("exec", id, "--", "sh", "-c", "echo hi; echo err >&2; exit 4")).toMatchObject({
      code: 4,
      stdout: "hi\n",
      stderr: "err\n",
    });
    expect((await cli("logs", id, "-c", "nope")).code).toBe(1);
  });
});
