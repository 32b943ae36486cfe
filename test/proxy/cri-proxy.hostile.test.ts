// cri-proxy as its own process against hostile clients: no client can crash it, auth comes before any body is
// read, and a bad flag is a start-up error naming it.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectGrpcWeb } from "../../src/cri/grpc-web-transport.js";
import type { FakeServer } from "../support/fake-cri.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

const TOKEN = "hostile-test-token";
let fake: FakeServer;
let proc: ChildProcess;
let port = 0;
let stderr = "";

function runProxy(args: string[]): ChildProcess {
  return spawn(process.execPath, ["bin/cri-proxy.mjs", ...args], { stdio: ["ignore", "ignore", "pipe"] });
}

/** Send raw bytes on a fresh connection; resolve with what came back before the socket closed (or the wait ran out). */
function raw(chunks: (string | Buffer)[], o: { destroyAfter?: boolean; waitMs?: number } = {}): Promise<string> {
  return new Promise((res) => {
    const s = connect(port, "127.0.0.1");
    let got = "";
    const done = () => {
      clearTimeout(t);
      s.destroy();
      res(got);
    };
    const t = setTimeout(done, o.waitMs ?? 500);
    s.on("data", (d) => (got += d.toString("latin1")));
    s.on("error", done);
    s.on("close", done);
    s.on("connect", () => {
      for (const c of chunks) s.write(c);
      if (o.destroyAfter) s.destroy();
    });
  });
}

const suite = useFakeCri();
beforeAll(async () => {
  ({ fake } = suite);
  const dir = mkdtempSync(join(tmpdir(), "podsync-proxy-"));
  writeFileSync(join(dir, "token"), TOKEN);
  proc = runProxy(["--runtime", fake.endpoint, "--grpc-web-listen", "127.0.0.1:0", "--token-file", join(dir, "token")]);
  proc.stderr!.on("data", (d) => (stderr += String(d)));
  for (let i = 0; i < 300 && !/gRPC-Web on 127\.0\.0\.1:(\d+)/.test(stderr); i++)
    await new Promise((r) => setTimeout(r, 50));
  port = Number(/gRPC-Web on 127\.0\.0\.1:(\d+)/.exec(stderr)?.[1]);
  expect(port).toBeGreaterThan(0);
});
afterAll(async () => {
  proc?.kill("SIGKILL");
});

const head = (len: number | string, token = TOKEN) =>
  `POST /runtime.v1.RuntimeService/Version HTTP/1.1\r\nhost: x\r\ncontent-type: application/grpc-web+proto\r\nauthorization: Bearer ${token}\r\ncontent-length: ${len}\r\n\r\n`;

describe("cri-proxy against hostile clients (a real proxy process)", () => {
  it("a truncated body, garbage, bad frame lengths and resets never crash it; it keeps serving", async () => {
    const hostile = [
      () => raw([head(1000), Buffer.alloc(10)], { destroyAfter: true }),
      () => raw([head(1000), Buffer.alloc(10)], { waitMs: 100 }),
      () => raw(["GARBAGE\r\n\r\n\x00\xff\xfe"]),
      () => raw([head(5), Buffer.from([0, 0xff, 0xff, 0xff, 0xff])]),
      () => raw([head(9), Buffer.from([0x80, 0, 0, 0, 9, 1, 2, 3, 4])]),
      () =>
        raw([head("chunked").replace("content-length: chunked", "transfer-encoding: chunked"), "5\r\nabc"], {
          destroyAfter: true,
        }),
    ];
    for (let round = 0; round < 5; round++) await Promise.all(hostile.map((h) => h()));
    expect(proc.exitCode).toBeNull();
    const cri = connectGrpcWeb({ baseUrl: `http://127.0.0.1:${port}`, token: TOKEN, timeoutMs: 5000 });
    expect((await cri.version({})).runtimeName).toBe("fake");
    cri.close();
    expect(proc.exitCode).toBeNull();
  });

  it("refuses an unauthenticated caller from its headers, before reading (or waiting for) any body", async () => {
    // 10 MiB declared, none sent: the answer must not wait for it.
    const answer = await raw([head(10 * 1024 * 1024, "wrong-token")], { waitMs: 3000 });
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer).toMatch(/grpc-status: 16/);
    expect(answer).toMatch(/connection: close/i);
  });

  it("a bad flag is a start-up error naming it", async () => {
    for (const [flag, value] of [
      ["--max-deadline-ms", "2m"],
      ["--max-concurrent", "lots"],
      ["--max-message-bytes", "1.5"],
      ["--grpc-web-listen", "nowhere"],
    ] as const) {
      const p = runProxy([
        "--runtime",
        fake.endpoint,
        "--insecure-no-auth",
        "--grpc-web-listen",
        "127.0.0.1:0",
        flag,
        value,
      ]);
      let err = "";
      p.stderr!.on("data", (d) => (err += String(d)));
      const code = await new Promise<number | null>((r) => p.on("exit", (c) => r(c)));
      expect(code, flag).toBe(2);
      expect(err).toContain(`cri-proxy: ${flag}:`);
    }
  });
});
