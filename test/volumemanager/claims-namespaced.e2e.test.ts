// Claims keyed by namespace (issue 34, item 4): <root>/volumes/pvc/<namespace>/<claim>. On the REAL containerd,
// ns-a's and ns-b's pods naming the same claim (a StatefulSet `db` in each: data-db-0) see two directories, not one;
// and the old flat layout is migrated once at start-up, logged, idempotent, resumable after a crash, with a claim
// whose namespace cannot be known set apart under .unassigned/.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { createPodRuntime, type PodRuntime } from "../../src/kubelet/pod-runtime.js";
import { nodeVolumeHost } from "../../src/host/volumes/volume-host.js";
import { nodePodDirs } from "../../src/host/volumes/pod-dirs.js";
import { migrateClaimLayout } from "../../src/host/volumes/claim-layout.js";
import { planClaimMigration, type ClaimNamespaces } from "../../src/volumemanager/claim-migration.js";
import type { Pod } from "../../src/pod/schema.js";
import { pod, deleteAll } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const root = mkdtempSync(join(tmpdir(), "podsync-claims-e2e-"));
let cri: CriClient;
let rt: PodRuntime;
const made = new Set<string>();

const exec = async (p: Pod, command: string[]) =>
  (await rt.exec(p.metadata.uid, { container: "main", command, timeoutSeconds: 10, maxOutputBytes: 65536 })).stdout
    .data;

describe.skipIf(skip)("claims keyed by namespace on real containerd", () => {
  beforeAll(() => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
    rt = createPodRuntime(cri, {
      pullBackOff: new MemoryPullBackOff(),
      volumeHost: nodeVolumeHost,
      podDirs: nodePodDirs,
      node: { ...defaultNodeConfig(), rootDir: root, podLogsDir: join(root, "logs"), seccompDefault: true },
    });
  });
  afterAll(async () => {
    await deleteAll(rt, made);
    cri?.close();
    if (!readFileSync("/proc/self/mountinfo", "utf8").includes(root)) rmSync(root, { recursive: true, force: true });
  });

  it("ns-a/data-db-0 and ns-b/data-db-0 are two directories: one namespace's pod never sees the other's data", async () => {
    const inNs = (namespace: string) => {
      const p = pod(
        {
          volumes: [{ name: "data", persistentVolumeClaim: { claimName: "data-db-0" } }],
          containers: [
            {
              name: "main",
              image: "localhost/busybox:1",
              command: ["sleep", "3600"],
              volumeMounts: [{ name: "data", mountPath: "/data" }],
            },
          ],
        },
        { namespace, name: "db-0" },
      );
      made.add(p.metadata.uid);
      return p;
    };
    const a = inNs("ns-a");
    const b = inNs("ns-b");
    expect((await rt.sync(a)).steps.filter((s) => !s.ok)).toEqual([]);
    expect((await rt.sync(b)).steps.filter((s) => !s.ok)).toEqual([]);
    await exec(a, ["sh", "-c", "echo prod > /data/secret"]);
    expect(await exec(b, ["sh", "-c", "cat /data/secret 2>/dev/null || echo none"])).toBe("none\n");
    expect(readFileSync(join(root, "volumes/pvc/ns-a/data-db-0/secret"), "utf8")).toBe("prod\n");
    expect(existsSync(join(root, "volumes/pvc/ns-b/data-db-0/secret"))).toBe(false);
    const listed = (await rt.claims()).claims.map(
      (c) => `${c.namespace}/${c.name}:${c.usedBy.map((u) => u.namespace)}`,
    );
    expect(listed.sort()).toEqual(["ns-a/data-db-0:ns-a", "ns-b/data-db-0:ns-b"]);
  });
});

describe("the claim layout's migration", () => {
  const known: ClaimNamespaces = {
    pods: [{ namespace: "web", claims: ["uploads"] }],
    statefulSets: [{ namespace: "prod", name: "db", templates: ["data"] }],
    claims: [{ namespace: "tools", name: "cache" }],
  };

  it("places each old claim by the stored pods, StatefulSets and claims; one it cannot place is set apart", () => {
    expect(
      planClaimMigration(["uploads", "data-db-0", "data-db-12", "data-db-x", "cache", "orphan"], {
        ...known,
        // The same claim name in two namespaces: the sharing this fixes; whose data it is cannot be known.
        pods: [...known.pods, { namespace: "staging", claims: ["cache"] }],
      }),
    ).toEqual([
      { claim: "uploads", namespace: "web" },
      { claim: "data-db-0", namespace: "prod" },
      { claim: "data-db-12", namespace: "prod" },
      { claim: "data-db-x", unplaced: "no stored pod, StatefulSet or claim names it" },
      {
        claim: "cache",
        unplaced: "named in several namespaces (staging, tools): whose data it holds cannot be known",
      },
      { claim: "orphan", unplaced: "no stored pod, StatefulSet or claim names it" },
    ]);
  });

  it("moves the directories once, logged; a second start does nothing; a start after a crash goes on", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-claim-layout-"));
    const pvc = join(dir, "volumes/pvc");
    for (const c of ["uploads", "data-db-0", "orphan"]) {
      mkdirSync(join(pvc, c), { recursive: true });
      writeFileSync(join(pvc, c, "f"), c);
    }
    const log: string[] = [];
    let asked = 0;
    const ask = async () => (asked++, known);
    await migrateClaimLayout(dir, ask, (l) => log.push(l));
    expect(readFileSync(join(pvc, "web/uploads/f"), "utf8")).toBe("uploads");
    expect(readFileSync(join(pvc, "prod/data-db-0/f"), "utf8")).toBe("data-db-0");
    expect(readFileSync(join(pvc, ".unassigned/orphan/f"), "utf8")).toBe("orphan");
    expect(existsSync(join(dir, "volumes/pvc.v1"))).toBe(false);
    expect(log).toEqual([
      expect.stringContaining("moved volume data-db-0 to namespace prod"),
      expect.stringMatching(
        /volume orphan not placed, no stored pod, StatefulSet or claim names it: moved to .*\.unassigned\/orphan/,
      ),
      expect.stringContaining("moved volume uploads to namespace web"),
    ]);
    // Idempotent: the marker says it is done; the stores are not even read.
    log.length = 0;
    await migrateClaimLayout(dir, ask, (l) => log.push(l));
    expect({ log, asked }).toEqual({ log: [], asked: 1 });
    expect(readdirSync(pvc).sort()).toEqual([".layout", ".unassigned", "prod", "web"]);

    // A crash after the first rename: the old tree is in pvc.v1, the new one partly made; the next start goes on.
    const crashed = mkdtempSync(join(tmpdir(), "podsync-claim-layout-"));
    mkdirSync(join(crashed, "volumes/pvc.v1/uploads"), { recursive: true });
    mkdirSync(join(crashed, "volumes/pvc/prod/data-db-0"), { recursive: true });
    await migrateClaimLayout(crashed, ask, () => undefined);
    expect(existsSync(join(crashed, "volumes/pvc/web/uploads"))).toBe(true);
    expect(existsSync(join(crashed, "volumes/pvc/prod/data-db-0"))).toBe(true);
    expect(existsSync(join(crashed, "volumes/pvc.v1"))).toBe(false);

    // A fresh node: nothing to move, the marker is written, so later claims are never taken for old ones.
    const fresh = mkdtempSync(join(tmpdir(), "podsync-claim-layout-"));
    await migrateClaimLayout(fresh, ask, () => undefined);
    mkdirSync(join(fresh, "volumes/pvc/ns-a/data"), { recursive: true });
    await migrateClaimLayout(fresh, ask, () => undefined);
    expect(existsSync(join(fresh, "volumes/pvc/ns-a/data"))).toBe(true);
    expect(asked).toBe(2);
    for (const d of [dir, crashed, fresh]) rmSync(d, { recursive: true, force: true });
  });
});
