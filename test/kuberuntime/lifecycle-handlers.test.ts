// Lifecycle hooks as kubelet's handlerRunner runs them (pkg/kubelet/lifecycle/handlers.go): exec through CRI
// ExecSync, httpGet through the node's network, sleep on a timer; kubelet's failure messages.
import { describe, expect, it } from "vitest";
import type { CriClient } from "../../src/cri/client.js";
import { runHandler, resolvePort, LIFECYCLE_USER_AGENT, type HookNetwork } from "../../src/lifecycle/handlers.js";
import { LifecycleHandler } from "../../src/pod/schema.js";

const enc = new TextEncoder();
const target = {
  pod: "p_ns(u1)",
  container: { name: "c", ports: [{ name: "http", containerPort: 8080, protocol: "TCP" as const }] },
  containerId: "cid",
  podIP: "10.0.0.7",
};
function cri(exitCode: number, stdout = "", stderr = ""): { client: CriClient; calls: unknown[] } {
  const calls: unknown[] = [];
  const client = {
    execSync: async (req: unknown) => (
      calls.push(req), { exitCode, stdout: enc.encode(stdout), stderr: enc.encode(stderr) }
    ),
  } as unknown as CriClient;
  return { client, calls };
}
const h = (x: unknown) => LifecycleHandler.parse(x);

describe("exec hooks", () => {
  it("run the command as given through ExecSync with no timeout of their own", async () => {
    const c = cri(0);
    expect(
      await runHandler({ cri: c.client }, target, h({ exec: { command: ["sh", "-c", "echo $(HOME)"] } })),
    ).toBeUndefined();
    expect(c.calls).toEqual([{ containerId: "cid", cmd: ["sh", "-c", "echo $(HOME)"], timeout: 0n }]);
  });
  it("a non-zero exit fails, in kubelet's words", async () => {
    const msg = await runHandler(
      { cri: cri(3, "out", "bad").client },
      target,
      h({ exec: { command: ["sh", "-c", "exit 3"] } }),
    );
    expect(msg).toBe(
      `Exec lifecycle hook ([sh -c exit 3]) for Container "c" in Pod "p_ns(u1)" failed - error: command 'sh -c exit 3' exited with 3: bad, message: "outbad"`,
    );
  });
});

describe("httpGet hooks", () => {
  const net = (
    result: "Success" | "Failure",
    output = "",
  ): HookNetwork & { reqs: { url: string; headers: [string, string][] }[] } => {
    const reqs: { url: string; headers: [string, string][] }[] = [];
    return { reqs, http: async (r) => (reqs.push(r), { result, output }) };
  };
  it("go to the pod IP on the named port, with kubelet's User-Agent", async () => {
    const n = net("Success");
    expect(
      await runHandler({ cri: cri(0).client, network: n }, target, h({ httpGet: { port: "http", path: "stop" } })),
    ).toBeUndefined();
    expect(n.reqs[0]!.url).toBe("http://10.0.0.7:8080/stop");
    expect(n.reqs[0]!.headers).toContainEqual(["User-Agent", LIFECYCLE_USER_AGENT]);
  });
  it("any response is an answer; no response is a failure", async () => {
    expect(
      await runHandler(
        { cri: cri(0).client, network: net("Failure", "HTTP probe failed with statuscode: 500") },
        target,
        h({ httpGet: { port: 80 } }),
      ),
    ).toBeUndefined();
    expect(
      await runHandler(
        { cri: cri(0).client, network: net("Failure", 'Get "http://10.0.0.7:80/": connect ECONNREFUSED') },
        target,
        h({ httpGet: { port: 80 } }),
      ),
    ).toBe(
      `HTTP lifecycle hook (/) for Container "c" in Pod "p_ns(u1)" failed - error: Get "http://10.0.0.7:80/": connect ECONNREFUSED`,
    );
  });
  it("fail where no network reaches pods", async () => {
    expect(await runHandler({ cri: cri(0).client }, target, h({ httpGet: { port: 80 } }))).toMatch(
      /cannot open connections to pods/,
    );
  });
  it("resolvePort takes numbers, numeric strings and the container's port names", () => {
    expect([
      resolvePort(1, target.container),
      resolvePort("2", target.container),
      resolvePort("http", target.container),
    ]).toEqual([1, 2, 8080]);
    expect(() => resolvePort("nope", target.container)).toThrow(/couldn't find port: nope/);
  });
});

describe("sleep hooks", () => {
  it("wait, and an abort ends them early as a failure", async () => {
    expect(await runHandler({ cri: cri(0).client }, target, h({ sleep: { seconds: 0 } }))).toBeUndefined();
    const ac = new AbortController();
    const p = runHandler({ cri: cri(0).client }, target, h({ sleep: { seconds: 60 } }), { signal: ac.signal });
    ac.abort();
    expect(await p).toMatch(/container terminated before sleep hook finished/);
  });
});
