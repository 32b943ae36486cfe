// Re-applying what the node already runs, as a user does it: `node bin/podsync.mjs` against the Node server
// (startNode, dev key, file state) on the REAL containerd (issue #35 items 0-3). An unchanged re-apply leaves the
// pods' probes and readiness as they were; apply's summary counts workloads and names nothing deleted that was
// not; a dry run shows the workloads it would delete and the real apply refuses without --prune-all; a
// StatefulSet pod deleted by a signed DELETE comes back at once while a replayed old sync stays refused; pods a
// rollout kills show as Terminating. Fails, never skips, without a runtime (unless PODSYNC_SKIP_E2E=1).
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { SignJWT, importJWK, type JWK } from "jose";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import type { Running } from "../../src/node.js";
import { until } from "../support/wait.js";
import { writeKubeconfig } from "../support/kubeconfig.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const dir = mkdtempSync(join(tmpdir(), "podsync-reapply-e2e-"));
const home = join(dir, "home");
const NS = `reapply-${Date.now().toString(36)}`;
let running: Running;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((res) =>
    execFile(
      process.execPath,
      ["bin/podsync.mjs", ...args],
      {
        env: {
          PATH: process.env["PATH"] ?? "",
          HOME: home,
          PODSYNC_URL: running?.url ?? "",
          PODSYNC_KEY: join(dir, "dev-key.json"),
          ...env,
        },
      },
      (e, stdout, stderr) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

/** A token signed with the node's dev key. */
async function sign(claims: Record<string, unknown>, iat?: number): Promise<string> {
  const jwk = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { iss: string };
  const key = await importJWK(jwk, "EdDSA");
  const t = Math.floor(Date.now() / 1000);
  return new SignJWT({ ...claims, jti: crypto.randomUUID() })
    .setProtectedHeader({ alg: "EdDSA", ...(jwk.kid ? { kid: jwk.kid } : {}) })
    .setIssuer(jwk.iss)
    .setAudience("reapply-node")
    .setIssuedAt(iat ?? t)
    .setExpirationTime((iat ?? t) + 300)
    .sign(key);
}

/** The node's pods (GET /v1/pods), this suite's namespace only. */
async function pods(): Promise<{ items: any[]; orphans: any[] }> {
  const r = await fetch(`${running.url}/v1/pods`, {
    headers: { authorization: `Bearer ${await sign({ act: "status" })}` },
  });
  const b = (await r.json()) as { items: any[]; orphans: any[] };
  const mine = (p: any) => p.metadata.namespace === NS;
  return { items: b.items.filter(mine), orphans: (b.orphans ?? []).filter(mine) };
}
const ready = (p: any) => p.status?.conditions?.find((c: any) => c.type === "Ready")?.status === "True";

const container = (extra: Record<string, unknown> = {}) => ({
  name: "main",
  image: "localhost/busybox:1",
  imagePullPolicy: "IfNotPresent",
  command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"],
  ...extra,
});
// The Deployment's pods ignore SIGTERM, so each old pod of a rollout stays Terminating for its whole grace period.
const deployment = (name: string, replicas: number, env = "1") => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name, namespace: NS },
  spec: {
    replicas,
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: {
        hostNetwork: true,
        terminationGracePeriodSeconds: 8,
        containers: [
          container({
            command: ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"],
            env: [{ name: "V", value: env }],
            readinessProbe: { exec: { command: ["true"] }, periodSeconds: 1 },
          }),
        ],
      },
    },
  },
});
const statefulSet = (name: string, replicas: number) => ({
  apiVersion: "apps/v1",
  kind: "StatefulSet",
  metadata: { name, namespace: NS },
  spec: {
    replicas,
    serviceName: name,
    podManagementPolicy: "Parallel",
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: { hostNetwork: true, terminationGracePeriodSeconds: 1, containers: [container()] },
    },
  },
});
const uidlessPod = (name: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: NS },
  spec: { hostNetwork: true, terminationGracePeriodSeconds: 1, containers: [container()] },
});
const file = (name: string, docs: unknown[]) => {
  const f = join(dir, name);
  writeFileSync(f, JSON.stringify({ apiVersion: "v1", kind: "List", items: docs }));
  return f;
};

const KUBECTL = process.env["PODSYNC_KUBECTL"] ?? "/usr/bin/kubectl";
/** kubectl with a kubeconfig for the node (its TLS port, a read token); never throws. */
function kubectl(...args: string[]): Promise<Run> {
  return new Promise((res) =>
    execFile(
      KUBECTL,
      args,
      { env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig") }, timeout: 60_000 },
      (e, stdout, stderr) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

beforeAll(async () => {
  if (skip) return;
  if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
  const { startNode } = await import("../../src/node.js");
  running = await startNode(
    {
      PODSYNC_CRI_ENDPOINT: endpoint,
      PODSYNC_SERVICE_DATAPLANE: "off",
      PODSYNC_PORT: "0",
      PODSYNC_NODE_NAME: "reapply-node",
      PODSYNC_POLICY: "privileged",
      PODSYNC_DEV_DIR: dir,
      PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
      PODSYNC_ROOT_DIR: join(dir, "root"),
      PODSYNC_RELIST_INTERVAL_MS: "500",
    },
    true,
  );
  if (!running.tls) throw new Error("the server serves no TLS");
  writeKubeconfig(join(dir, "kubeconfig"), {
    name: "n",
    tls: running.tls,
    token: await sign({ act: "read" }),
    namespace: NS,
  });
});

afterAll(async () => {
  if (skip || !endpoint) return;
  // The node's set emptied, so its pods go with it.
  await cli(["apply", "-f", file("empty.json", []), "--prune-all"]).catch(() => undefined);
  await running?.close();
  const cri = connectGrpc({ endpoint });
  const rt = createPodRuntime(cri, {});
  const left = await cri.listPodSandbox({}).catch(() => ({ items: [] }));
  for (const sb of left.items)
    if (sb.metadata?.namespace === NS) await rt.delete(sb.metadata.uid, 0).catch(() => undefined);
  cri.close();
}, 120_000);

describe.skipIf(skip)("re-applying what the node runs (issue #35)", () => {
  let first: Run;
  let again: Run;
  it("an unchanged re-apply (PUT) of a Deployment with an exec readiness probe keeps its pods Ready, with the same containers", async () => {
    const set = file("set.json", [deployment("api", 2), uidlessPod("rp")]);
    first = await cli(["apply", "-f", set]);
    expect(first.code, first.stderr).toBe(0);
    const two = await until("both api pods and rp Ready", async () => {
      const p = await pods();
      const api = p.items.filter((x) => x.metadata.name.startsWith("api-"));
      return api.length === 2 && api.every(ready) && p.items.some((x) => x.metadata.name === "rp" && ready(x)) && p;
    });
    const before = two.items.map((p) => `${p.metadata.uid}:${p.status.containerStatuses[0].containerID}`).sort();

    again = await cli(["apply", "-f", set]);
    expect(again.code, again.stderr).toBe(0);
    // At once and after several probe periods (the PUT dropped the prober's workers of the Deployment's pods
    // before: Ready False from its answer on, for good): the same containers, all Ready.
    const now = await pods();
    expect(now.items.filter((p) => p.metadata.name.startsWith("api-")).every(ready)).toBe(true);
    await new Promise((r) => setTimeout(r, 3000));
    const later = await pods();
    expect(later.items.length).toBe(3);
    expect(later.items.every(ready), JSON.stringify(later.items.map((p) => p.status.conditions))).toBe(true);
    expect(later.items.map((p) => `${p.metadata.uid}:${p.status.containerStatuses[0].containerID}`).sort()).toEqual(
      before,
    );
  }, 120_000);

  it("apply's summary counts workloads, and an unchanged uid-less pod is unchanged, never deleted", () => {
    expect(first.stdout).toContain("deployment/api created");
    expect(first.stdout).toContain("pod/rp created");
    expect(first.stderr).toMatch(/2 created, 0 configured, 0 unchanged, 0 deleted/);
    expect(again.stdout).toContain("deployment/api unchanged");
    expect(again.stdout).toContain("pod/rp unchanged");
    expect(again.stdout).not.toContain("deleted");
    expect(again.stderr).toMatch(/0 created, 0 configured, 2 unchanged, 0 deleted/);
  });

  it("a rollout's old pods are Terminating (deletionTimestamp, deletionGracePeriodSeconds) in GET /v1/pods, podsync get pods and kubectl get pods until gone; never orphans", async () => {
    const old = new Set(
      (await pods()).items.filter((p) => p.metadata.name.startsWith("api-")).map((p) => p.metadata.uid),
    );
    const rolled = await cli(["apply", "-f", file("set2.json", [deployment("api", 2, "2"), uidlessPod("rp")])]);
    expect(rolled.code, rolled.stderr).toBe(0);
    expect(rolled.stdout).toContain("deployment/api configured");
    const listed = await until("an old api pod Terminating in GET /v1/pods", async () => {
      const p = await pods();
      const t = p.items.find((x) => old.has(x.metadata.uid) && x.metadata.deletionTimestamp);
      return t && { t, p };
    });
    expect(listed.t.metadata.deletionGracePeriodSeconds).toBe(8);
    expect(Date.parse(listed.t.metadata.deletionTimestamp)).toBeGreaterThan(Date.now() - 8000);
    expect(listed.t.metadata.ownerReferences?.[0]?.kind).toBe("ReplicaSet");
    expect(listed.p.orphans.map((x: any) => x.metadata.uid)).not.toContain(listed.t.metadata.uid);
    const cliRow = await until("podsync get pods shows Terminating", async () => {
      const r = await cli(["get", "pods", "-n", NS]);
      return r.stdout.split("\n").find((l) => /\sTerminating\s/.test(l));
    });
    expect(cliRow).toMatch(/^api-/);
    const kubeRow = await until("kubectl get pods shows Terminating", async () => {
      const r = await kubectl("get", "pods");
      return r.stdout.split("\n").find((l) => /\sTerminating\s/.test(l));
    });
    expect(kubeRow).toMatch(/^api-/);
    // Gone once killed: two new pods, Ready; nothing of the old ones listed anywhere.
    await until(
      "the rollout done, the old pods gone",
      async () => {
        const p = await pods();
        const api = p.items.filter((x) => x.metadata.name.startsWith("api-"));
        return api.length === 2 && api.every((x) => !old.has(x.metadata.uid) && ready(x)) && p.orphans.length === 0;
      },
      60_000,
    );
  }, 120_000);

  it("apply --dry-run shows the Deployment a file leaves out (and its pods) as deleted, with --json too; the apply is refused without --prune-all", async () => {
    const only = file("only-rp.json", [uidlessPod("rp")]);
    const dry = await cli(["apply", "-f", only, "--dry-run"]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain("pod/rp unchanged (dry run)");
    expect(dry.stdout).toContain("deployment/api deleted (dry run)");
    expect(dry.stdout).toMatch(/ {2}replicaset\/api-[a-z0-9]+ would be deleted with deployment\/api/);
    expect(dry.stdout.match(/ {2}pod\/api-\S+ \(\S+\) would be deleted with deployment\/api/g)?.length).toBe(2);
    expect(dry.stderr).toContain("the apply would be refused");
    const json = JSON.parse((await cli(["apply", "-f", only, "--dry-run", "--json"])).stdout);
    expect(json).toMatchObject({
      dryRun: true,
      needsPruneAll: true,
      pods: [{ name: "rp", change: "unchanged" }],
      deleted: { workloads: [{ kind: "Deployment", name: "api", namespace: NS }] },
    });
    expect(json.deleted.workloads[0].pods).toHaveLength(2);

    const refused = await cli(["apply", "-f", only]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`leaves out deployment/api (${NS})`);
    expect(refused.stderr).toContain("add --prune-all");
    expect((await pods()).items.filter((p) => p.metadata.name.startsWith("api-"))).toHaveLength(2);

    const pruned = await cli(["apply", "-f", only, "--prune-all"]);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toContain("deployment/api deleted");
    expect(pruned.stdout).toContain("pod/rp unchanged");
    expect(pruned.stderr).toMatch(/0 created, 0 configured, 1 unchanged, 1 deleted/);
  }, 120_000);
});

describe.skipIf(skip)("tombstones know their owner (issue #35, 2)", () => {
  it("a StatefulSet pod deleted with podsync delete is made again by its controller at once, while a sync signed before the delete stays refused; an exported owned pod re-synced keeps its owner", async () => {
    const r = await cli(["sync", "-f", file("sts.json", [statefulSet("db", 2)])]);
    expect(r.code, r.stderr).toBe(0);
    const dbPods = async () => (await pods()).items.filter((p) => /^db-[01]$/.test(p.metadata.name));
    const both = await until("db-0 and db-1 Ready", async () => {
      const p = await dbPods();
      return p.length === 2 && p.every(ready) && p;
    });
    const db1 = both.find((p) => p.metadata.name === "db-1")!;
    // A sync of db-1's spec signed now, before the delete (it is sent only after).
    const late = await sign({
      act: "sync",
      pod: { metadata: { name: "db-1", namespace: NS, uid: db1.metadata.uid }, spec: db1.spec },
    });
    await new Promise((r) => setTimeout(r, 1100)); // the delete's token is issued a second later (iat resolution)
    const deleted = await cli(["delete", "db-1", "-n", NS]);
    expect(deleted.code, deleted.stderr).toBe(0);
    const t0 = Date.now();
    const back = await until("db-1 made again and Ready", async () => {
      const p = (await dbPods()).find((x) => x.metadata.name === "db-1" && !x.metadata.deletionTimestamp);
      return p && ready(p) && p;
    });
    console.log(`db-1 back and Ready ${Date.now() - t0} ms after its DELETE answered`);
    expect(back.metadata.uid).toBe(db1.metadata.uid);
    expect(back.metadata.ownerReferences?.[0]).toMatchObject({ kind: "StatefulSet", name: "db" });
    // The old request is still refused by the tombstone.
    const replay = await fetch(`${running.url}/v1/pods/sync`, {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: late,
    });
    expect(replay.status).toBe(409);
    expect(await replay.text()).toContain("was removed (DELETE) by a token issued at");
    // The StatefulSet counts the pods that exist and are ready.
    await until("sts db 2/2 with 2 pods", async () => {
      const g = await cli(["get", "sts", "db", "-n", NS]);
      return /\bdb\s+2\/2\b/.test(g.stdout) && (await dbPods()).length === 2;
    });

    // `kubectl get pod db-0 -o json`, synced again: db-0 keeps its StatefulSet as owner (with a warning saying so).
    const exported = await kubectl("get", "pod", "db-0", "-o", "json");
    expect(exported.code, exported.stderr).toBe(0);
    const resynced = await cli(["sync", "-f", file("db-0.json", [JSON.parse(exported.stdout)])]);
    expect(resynced.code, resynced.stderr).toBe(0);
    expect(resynced.stderr).toContain("stays owned by this node's StatefulSet db");
    const db0 = (await dbPods()).find((p) => p.metadata.name === "db-0")!;
    expect(db0.metadata.ownerReferences?.[0]).toMatchObject({ kind: "StatefulSet", name: "db", controller: true });
    expect(ready(db0)).toBe(true);
  }, 120_000);
});

describe.skipIf(skip)("DELETE cancels a sync in progress (issue #34, 8)", () => {
  it("a pod whose postStart hook hangs: DELETE answers 200 at once (not 409 pod-busy while the hook runs), the sync is cancelled and told the pod left, and nothing of the pod is left", async () => {
    const id = `hang-${Date.now().toString(36)}`;
    const pod = {
      metadata: { name: "hang", namespace: NS, uid: id },
      spec: {
        hostNetwork: true,
        terminationGracePeriodSeconds: 1,
        containers: [container({ lifecycle: { postStart: { exec: { command: ["sleep", "600"] } } } })],
      },
    };
    const syncing = fetch(`${running.url}/v1/pods/sync`, {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: await sign({ act: "sync", pod }),
    }).then(async (r) => ({ status: r.status, body: await r.text() }));
    // The hook is running: the container was started, and the sync is still waiting for the hook.
    await until("the container started, its postStart hook running", async () => {
      const p = (await pods()).items.find((x) => x.metadata.uid === id);
      return p?.status.containerStatuses?.[0]?.state?.running !== undefined;
    });
    let answered = false;
    void syncing.then(() => (answered = true));
    expect(answered).toBe(false);
    const del = await fetch(`${running.url}/v1/pods/${id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await sign({ act: "delete", uid: id })}` },
    });
    const delBody = await del.text();
    expect(del.status, delBody).toBe(200);
    expect(JSON.parse(delBody)).toMatchObject({ deleted: true, desired: true });
    const s = await syncing;
    expect(s.status, s.body).toBe(409);
    expect(s.body).toContain("left the desired state");
    const cri = connectGrpc({ endpoint });
    try {
      const left = await cri.listPodSandbox({});
      expect(left.items.filter((sb) => sb.metadata?.uid === id)).toEqual([]);
    } finally {
      cri.close();
    }
  }, 120_000);
});
