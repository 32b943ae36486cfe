import { describe, expect, it } from "vitest";
import type { CriClient } from "../../src/cri/client.js";
import { callTimeoutMs, MAX_DEADLINE_MS } from "../../src/cri/deadline.js";
import { connectGrpcWeb } from "../../src/cri/grpc-web-transport.js";
import { runProbe } from "../../src/prober/probe.js";

describe("a CRI call's deadline", () => {
  it("is the caller's timeout, else the default plus the call's own work, kept in range", () => {
    expect(callTimeoutMs(undefined, 10_000)).toBe(10_000);
    expect(callTimeoutMs({ timeoutMs: 2500 }, 10_000)).toBe(2500);
    expect(callTimeoutMs({ workMs: 1000 }, 10_000)).toBe(11_000);
    expect(callTimeoutMs({ timeoutMs: 2500, workMs: 1000 }, 10_000)).toBe(2500);
    expect(callTimeoutMs({ workMs: Number.MAX_SAFE_INTEGER }, 10_000)).toBe(MAX_DEADLINE_MS);
  });

  it("reaches the wire as the grpc-timeout header", async () => {
    const sent: string[] = [];
    const cri = connectGrpcWeb({
      baseUrl: "http://127.0.0.1:1",
      timeoutMs: 10_000,
      fetch: async (_url, init) => {
        sent.push(new Headers(init?.headers).get("grpc-timeout") ?? "");
        return new Response(null, { status: 200, headers: { "grpc-status": "5", "grpc-message": "gone" } });
      },
    });
    await expect(cri.execSync({ containerId: "c", cmd: ["true"], timeout: 1n }, { workMs: 1000 })).rejects.toThrow();
    await expect(cri.stopContainer({ containerId: "c", timeout: 2n }, { workMs: 2000 })).rejects.toThrow();
    expect(sent).toEqual(["11000m", "12000m"]);
  });

  it("of an exec probe leaves the runtime its request timeout beyond the probe's", async () => {
    const options: unknown[] = [];
    const cri = {
      execSync: async (_r: unknown, o: unknown) => {
        options.push(o);
        return { exitCode: 0, stdout: new Uint8Array(), stderr: new Uint8Array() };
      },
    } as unknown as CriClient;
    const probe = { exec: { command: ["true"] }, timeoutSeconds: 3 } as Parameters<typeof runProbe>[2];
    const container = { name: "main", image: "busybox" } as Parameters<typeof runProbe>[3];
    await expect(runProbe(cri, undefined, probe, container, "c", "10.0.0.1")).resolves.toMatchObject({
      result: "Success",
    });
    // No timeoutMs of its own: the transport's default (kubelet's runtime-request-timeout) plus the 3 s.
    expect(options).toEqual([{ workMs: 3000 }]);
  });
});
