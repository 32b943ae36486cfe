// podsync kubeconfig, in-process and with no server: the kubeconfig it prints (the node's certificate as
// certificate-authority-data, an exec credential plugin that runs this podsync by absolute path) and the
// plugin's own mode (an ExecCredential around a read token the node's verifier takes).
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parse } from "yaml";
import kubeconfig, { CACHE_GUARD } from "../../src/cli/commands/keys/kubeconfig.js";
import { cacheKey } from "../../src/cli/token-cache.js";
import token from "../../src/cli/commands/keys/token.js";
import type { Command } from "../../src/cli/command.js";
import { createCtx } from "../../src/cli/client.js";
import { generateSigningKey } from "../../src/auth/keys.js";
import { selfSignedCert } from "../../src/host/serving/serving-cert.js";
import { createVerifier } from "../../src/auth/verify.js";
import { MemoryReplayStore } from "../../src/auth/replay.js";
import { verifyReadToken } from "../../src/auth/read-token.js";

const dir = mkdtempSync(join(tmpdir(), "podsync-kubeconfig-"));

async function output(
  o: Record<string, string | boolean>,
  command: Command = kubeconfig,
  name = "kubeconfig",
): Promise<string> {
  let out = "";
  vi.spyOn(process.stdout, "write").mockImplementation(((c: unknown) => ((out += String(c)), true)) as never);
  vi.spyOn(console, "log").mockImplementation((...a: unknown[]) => void (out += `${a.join(" ")}\n`));
  vi.spyOn(console, "error").mockImplementation(() => undefined);
  await command.run(createCtx(name, [], o));
  vi.restoreAllMocks();
  return out;
}

afterEach(() => vi.restoreAllMocks());

describe("podsync kubeconfig", async () => {
  const k = await generateSigningKey("EdDSA");
  const keyFile = join(dir, "key.json");
  writeFileSync(keyFile, JSON.stringify({ ...k.privateJwk, iss: "fleet-1" }));
  const cert = selfSignedCert("n1@podsync", ["localhost"], ["127.0.0.1"]);
  writeFileSync(join(dir, "ca.pem"), cert.cert);

  it("prints a kubeconfig with the CA and an exec plugin running this podsync by absolute path", async () => {
    const text = await output({
      server: "https://127.0.0.1:8443",
      key: keyFile,
      node: "n1",
      ca: join(dir, "ca.pem"),
      exec: true,
      namespace: "web",
    });
    const c = parse(text.replace(/^#.*\n/, "")) as Record<string, any>;
    expect(c.clusters[0].cluster).toEqual({
      server: "https://127.0.0.1:8443",
      "certificate-authority-data": Buffer.from(cert.cert).toString("base64"),
    });
    expect(c.contexts[0].context.namespace).toBe("web");
    const exec = c.users[0].user.exec;
    expect(exec).toMatchObject({
      apiVersion: "client.authentication.k8s.io/v1",
      command: "/bin/sh",
      interactiveMode: "Never",
      provideClusterInfo: true,
    });
    // The cache guard, the cache file's name (the plugin's own key for this server), then the plugin itself.
    const [flag, guard, name0, file, node, ...plugin] = exec.args as string[];
    expect([flag, guard, name0]).toEqual(["-c", CACHE_GUARD, "podsync-token"]);
    expect(file).toMatch(/^exec-credential-[0-9a-f]{32}\.json$/);
    expect(file).toBe(
      `exec-credential-${cacheKey(plugin.slice(1), { KUBERNETES_EXEC_INFO: JSON.stringify({ spec: { cluster: { server: "https://127.0.0.1:8443" } } }) })}.json`,
    );
    expect(node).toBe(process.execPath);
    expect(plugin[0]).toMatch(/^\/.*\/bin\/podsync\.mjs$/);
    expect(plugin.slice(1)).toEqual([
      "token",
      "--act",
      "read",
      "--exec-credential",
      "--ttl",
      "300",
      "--key",
      keyFile,
      "--aud",
      "n1",
      "--exec",
    ]);
    expect(text).not.toContain("npx");
  });

  it("a server URL with a path (a node behind a Worker, /nodes/{node}) keeps it", async () => {
    const text = await output({
      server: "https://w.example:8443/nodes/n1/",
      key: keyFile,
      node: "n1",
      ca: join(dir, "ca.pem"),
    });
    expect((parse(text.replace(/^#.*\n/, "")) as Record<string, any>).clusters[0].cluster.server).toBe(
      "https://w.example:8443/nodes/n1",
    );
  });

  it("an http:// server is refused: kubectl would send no credentials", async () => {
    await expect(
      output({ server: "http://127.0.0.1:8080", key: keyFile, node: "n1", ca: join(dir, "ca.pem") }),
    ).rejects.toThrow(/must be https/);
  });

  it.each([
    [
      "podsync token --act read --exec-credential (what the kubeconfig runs)",
      () =>
        output(
          { act: "read", "exec-credential": true, ttl: "300", key: keyFile, aud: "n1", exec: true },
          token,
          "token",
        ),
    ],
    [
      "podsync kubeconfig --credential (what earlier kubeconfigs run)",
      () => output({ credential: true, key: keyFile, aud: "n1", exec: true }),
    ],
  ])("%s prints an ExecCredential whose token is a read token the node accepts, reusable", async (_, run) => {
    const cred = JSON.parse(await run()) as {
      apiVersion: string;
      kind: string;
      status: { token: string; expirationTimestamp: string };
    };
    expect(cred).toMatchObject({ apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential" });
    const left = Date.parse(cred.status.expirationTimestamp) - Date.now();
    expect(left).toBeGreaterThan(250_000);
    expect(left).toBeLessThanOrEqual(300_000);
    const verifier = createVerifier({
      keys: { jwks: k.jwks },
      issuers: ["fleet-1"],
      audience: ["n1"],
      replay: new MemoryReplayStore(),
    });
    for (let i = 0; i < 2; i++) {
      const scope = await verifyReadToken(verifier, `Bearer ${cred.status.token}`);
      expect(scope.exec).toBe(true);
      expect(scope.token.payload["act"]).toBe("read");
    }
  });

  it("podsync token --act read: a bare token by default; refused beyond 300 s, and --exec only with read", async () => {
    const bare = (await output({ act: "read", key: keyFile, aud: "n1" }, token, "token")).trim();
    expect(bare.split(".")).toHaveLength(3);
    await expect(output({ act: "read", ttl: "600", key: keyFile, aud: "n1" }, token, "token")).rejects.toThrow(
      /at most 300/,
    );
    await expect(output({ act: "status", exec: true, key: keyFile, aud: "n1" }, token, "token")).rejects.toThrow(
      /--exec goes with --act read/,
    );
  });
});
