// kubectl itself against the Node server on the REAL containerd: the node's Kubernetes API (src/kubeapi/) over
// the server's own port in TLS, with a read token. kubectl is on the machine image (/usr/bin/kubectl); its
// absence fails this suite, it never skips it (unless PODSYNC_SKIP_E2E=1, as for every e2e suite).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { importJWK, SignJWT, type JWK } from "jose";
import type { Running } from "../../src/node.js";
import { until } from "../support/wait.js";
import { uid } from "../support/pods.js";
import { fileURLToPath } from "node:url";
import { writeKubeconfig } from "../support/kubeconfig.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const KUBECTL = process.env["PODSYNC_KUBECTL"] ?? "/usr/bin/kubectl";
const NODE = "kube-e2e";
const NS = `kube-e2e-${uid("")
  .replace(/[^a-z0-9]/g, "")
  .slice(-8)}`;
/** The Deployment's namespace (apart, so the pod counts above stay the suite's two). */
const APPS = `${NS}-apps`;
const SITE_UID = uid("site");
const dir = mkdtempSync(join(tmpdir(), "podsync-kubectl-e2e-"));
let running: Running;
let key: JWK & { alg: string };
const uids: string[] = [];
const children: ChildProcess[] = [];

async function sign(claims: Record<string, unknown>): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, ...(key.kid ? { kid: key.kid } : {}) })
    .setIssuer("podsync-dev")
    .setAudience(NODE)
    .setIssuedAt()
    .setExpirationTime("5m")
    .setJti(crypto.randomUUID())
    .sign(await importJWK(key, key.alg));
}

async function syncPod(name: string, command: string[], labels: Record<string, string>) {
  const id = uid(name);
  uids.push(id);
  const pod = {
    metadata: { name, namespace: NS, uid: id, labels },
    spec: {
      terminationGracePeriodSeconds: 1,
      volumes: [{ name: "data", emptyDir: {} }],
      containers: [
        {
          name: "main",
          image: "localhost/busybox:1",
          imagePullPolicy: "IfNotPresent",
          command,
          volumeMounts: [{ name: "data", mountPath: "/data" }],
        },
      ],
    },
  };
  const r = await fetch(`${running.url}/v1/pods/sync`, {
    method: "POST",
    headers: { "content-type": "application/jose" },
    body: await sign({ act: "sync", pod }),
  });
  expect(r.status, await r.clone().text()).toBe(200);
}

/** kubectl with the suite's kubeconfig; never throws: the exit code and both streams. */
function kubectl(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((res) =>
    execFile(
      KUBECTL,
      args,
      { env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig") }, timeout: 60_000 },
      (e, out, err) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, out, err }),
    ),
  );
}

/** The node's workloads: a Deployment, signed as any sync. */
async function syncItems(items: unknown[]) {
  const r = await fetch(`${running.url}/v1/pods/sync`, {
    method: "POST",
    headers: { "content-type": "application/jose" },
    body: await sign({ act: "sync", items }),
  });
  expect(r.status, await r.clone().text()).toBe(200);
}

/** This podsync's CLI, as a user runs it. */
function podsync(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const bin = fileURLToPath(new URL("../../bin/podsync.mjs", import.meta.url));
  return new Promise((res) =>
    execFile(process.execPath, [bin, ...args], { timeout: 120_000 }, (e, out, err) =>
      res({ code: e ? 1 : 0, out, err }),
    ),
  );
}

/** A long-running kubectl (-w, -f), started now: its output so far. */
function background(args: string[]): { out: () => string; stop: () => void } {
  const child = spawn(KUBECTL, args, { env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig") } });
  children.push(child);
  let out = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr.on("data", (b: Buffer) => (out += b.toString()));
  return { out: () => out, stop: () => child.kill() };
}

/** A long-running kubectl, read until `want` shows in its output, then stopped. */
async function streamUntil(args: string[], want: (out: string) => boolean, what: string): Promise<string> {
  const b = background(args);
  try {
    return await until(what, async () => (want(b.out()) ? b.out() : undefined), 60_000);
  } finally {
    b.stop();
  }
}

let crashWatch: ReturnType<typeof background>;
let eventWatch: ReturnType<typeof background>;

describe.skipIf(skip)("kubectl against the node", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    if (!existsSync(KUBECTL))
      throw new Error(
        `kubectl is missing at ${KUBECTL}: this suite runs the real kubectl (install it, or set PODSYNC_KUBECTL to one)`,
      );
    const { startNode } = await import("../../src/node.js");
    running = await startNode(
      {
        PODSYNC_CRI_ENDPOINT: endpoint,
        PODSYNC_SERVICE_DATAPLANE: "off",
        PODSYNC_PORT: "0",
        PODSYNC_NODE_NAME: NODE,
        PODSYNC_POLICY: "privileged",
        PODSYNC_DEV_DIR: dir,
        PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
        PODSYNC_RELIST_INTERVAL_MS: "300",
        PODSYNC_ALLOW_EXEC: "true",
      },
      true,
    );
    key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { alg: string };
    if (!running.tls) throw new Error("the server serves no TLS");
    writeKubeconfig(join(dir, "kubeconfig"), {
      name: NODE,
      tls: running.tls,
      token: await sign({ act: "read", exec: true }),
      namespace: NS,
    });
    await syncPod("web", ["sh", "-c", "echo hello; i=0; while true; do i=$((i+1)); echo line $i; sleep 0.2; done"], {
      app: "web",
    });
    // One replica, converging while the other tests run.
    await syncItems([
      {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "site", namespace: APPS, uid: SITE_UID },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: "site" } },
          template: {
            metadata: { labels: { app: "site" } },
            spec: {
              terminationGracePeriodSeconds: 1,
              containers: [
                {
                  name: "main",
                  image: "localhost/busybox:1",
                  imagePullPolicy: "IfNotPresent",
                  command: ["sleep", "3600"],
                },
              ],
            },
          },
        },
      },
    ]);
    // Watched from before its first start, so the watch sees it run and then restart.
    crashWatch = background(["get", "pods", "-l", "app=crash", "-w"]);
    eventWatch = background(["get", "events", "-w", "--field-selector", "involvedObject.name=crash"]);
    // Its first instance exits after 2 s; the one that replaces it (the pod's emptyDir remembers) keeps running,
    // so --previous has the first one's log (kubelet keeps one dead instance per container).
    await syncPod(
      "crash",
      [
        "sh",
        "-c",
        "echo run-$(date +%s); if [ -f /data/ran ]; then exec sleep 3600; fi; echo x > /data/ran; sleep 2; exit 3",
      ],
      { app: "crash" },
    );
    await until("both pods running in kubectl's view", async () => {
      const r = await kubectl("get", "pods", "--no-headers");
      return (r.out.match(/Running/g) ?? []).length === 2;
    });
  }, 120_000);

  afterAll(async () => {
    for (const c of children) c.kill();
    // The Deployment goes, and its pods with it (deleted here, not left to the controllers' next pass).
    await fetch(`${running.url}/v1/workloads/${SITE_UID}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await sign({ act: "delete", uid: SITE_UID })}` },
    }).catch(() => undefined);
    const left = (await fetch(`${running.url}/v1/pods`, {
      headers: { authorization: `Bearer ${await sign({ act: "status" })}` },
    })
      .then((r) => r.json())
      .catch(() => ({ items: [] }))) as { items?: { metadata: { namespace: string; uid: string } }[] };
    for (const p of left.items ?? []) if (p.metadata.namespace === APPS) uids.push(p.metadata.uid);
    await Promise.all(
      [...new Set(uids)].map(async (id) =>
        fetch(`${running.url}/v1/pods/${id}`, {
          method: "DELETE",
          headers: { authorization: `Bearer ${await sign({ act: "delete", uid: id })}` },
        }).catch(() => undefined),
      ),
    );
    await running?.close();
  }, 60_000);

  it("get pods: plain, -A, -o wide|json|yaml|name, -l and --field-selector", async () => {
    const plain = await kubectl("get", "pods");
    expect(plain.code, plain.err).toBe(0);
    expect(plain.out).toMatch(/^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\n/);
    expect(plain.out).toMatch(/\nweb\s+1\/1\s+Running\s+0\s+\S+\n/);
    const all = await kubectl("get", "pods", "-A");
    expect(all.out).toMatch(/^NAMESPACE\s+NAME\s+READY/);
    expect(all.out).toContain(`${NS} `);
    const wide = await kubectl("get", "pods", "-o", "wide");
    expect(wide.out).toMatch(/NOMINATED NODE\s+READINESS GATES/);
    expect(wide.out).toMatch(new RegExp(`\\nweb\\s+1/1\\s+Running.*\\s${NODE}\\s+<none>\\s+<none>`));
    const json = JSON.parse((await kubectl("get", "pods", "-o", "json")).out) as {
      items: { metadata: { name: string }; spec: { nodeName: string } }[];
    };
    expect(json.items.map((p) => p.metadata.name).sort()).toEqual(["crash", "web"]);
    expect(json.items[0]!.spec.nodeName).toBe(NODE);
    expect((await kubectl("get", "pod", "web", "-o", "yaml")).out).toMatch(
      /kind: Pod[\s\S]*name: web[\s\S]*phase: Running/,
    );
    expect((await kubectl("get", "pods", "-o", "name")).out.trim().split("\n").sort()).toEqual([
      "pod/crash",
      "pod/web",
    ]);
    expect((await kubectl("get", "pods", "-l", "app=web", "-o", "name")).out.trim()).toBe("pod/web");
    expect(
      (
        await kubectl(
          "get",
          "pods",
          "-A",
          "--field-selector",
          `metadata.name=crash,metadata.namespace=${NS}`,
          "-o",
          "name",
        )
      ).out.trim(),
    ).toBe("pod/crash");
    expect(
      (await kubectl("get", "pods", "--field-selector", `spec.nodeName=${NODE},status.phase=Running`, "-o", "name")).out
        .trim()
        .split("\n"),
    ).toHaveLength(2);
    const bad = await kubectl("get", "pods", "-l", "app in (x");
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/unable to parse requirement/);
  }, 120_000);

  it("get pods -w sees the crashing pod restart", async () => {
    const rows = () =>
      crashWatch
        .out()
        .split("\n")
        .filter((l) => l.startsWith("crash "));
    const t0 = Date.now();
    await until(
      "kubectl get pods -w to show the crashing pod restarted",
      async () => rows().some((l) => /^crash\s+\S+\s+\S+\s+[1-9]/.test(l)),
      60_000,
    );
    console.log(`kubectl get pods -w saw the restart ${Date.now() - t0} ms into the test:\n${crashWatch.out()}`);
    crashWatch.stop();
    expect(crashWatch.out()).toMatch(/NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\n/);
    // It was seen running before it restarted: the restart came as a watch event, not in the first list.
    expect(rows()[0]).toMatch(/^crash\s+\S+\s+\S+\s+0\s/);
  }, 90_000);

  it("a pod the node's admission refuses is never stored, but its event is there: kubelet's rejectPod", async () => {
    const id = uid("refused");
    const pod = {
      metadata: { name: "refused", namespace: NS, uid: id },
      spec: {
        nodeSelector: { "kubernetes.io/hostname": "elsewhere" },
        containers: [
          { name: "main", image: "localhost/busybox:1", imagePullPolicy: "IfNotPresent", command: ["sleep", "1d"] },
        ],
      },
    };
    const r = await fetch(`${running.url}/v1/pods/sync`, {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: await sign({ act: "sync", pod }),
    });
    expect(r.status).toBe(403);
    const ev = await kubectl("get", "events", "--field-selector", "involvedObject.name=refused");
    expect(ev.out).toMatch(
      /Warning\s+NodeAffinity\s+pod\/refused\s+Predicate NodeAffinity failed: node\(s\) didn't match Pod's node affinity\/selector/,
    );
    expect((await kubectl("get", "pod", "refused")).err).toMatch(/NotFound.*pods "refused" not found/);
  }, 60_000);

  it("describe pod shows the pod and kubelet's events; get events lists them", async () => {
    const d = await kubectl("describe", "pod", "web");
    expect(d.code, d.err).toBe(0);
    expect(d.out).toMatch(new RegExp(`Node:\\s+${NODE}`));
    expect(d.out).toMatch(/Events:[\s\S]*Normal\s+Created\s+\S+\s+kubelet\s+Created container: main/);
    expect(d.out).toMatch(/Normal\s+Started\s+\S+\s+kubelet\s+Started container main/);
    // Watched from before the crashing pod was synced: its events came as the stream's.
    await until("kubectl get events -w to stream the crashing pod's Started", async () =>
      /Normal\s+Started\s+pod\/crash\s+Started container main/.test(eventWatch.out()),
    );
    eventWatch.stop();
    const ev = await kubectl("get", "events");
    expect(ev.out).toMatch(/LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE/);
    expect(ev.out).toMatch(/Normal\s+Started\s+pod\/web\s+Started container main/);
  }, 60_000);

  it("logs, logs -f and logs --previous", async () => {
    expect((await kubectl("logs", "web", "--tail", "-1")).out).toMatch(/^hello\nline 1\n/);
    await streamUntil(
      ["logs", "-f", "web", "--tail", "1"],
      (o) => (o.match(/line \d+/g) ?? []).length >= 3,
      "kubectl logs -f to follow three lines",
    );
    await until(
      "the crashing pod's second instance to run",
      async () =>
        (
          await kubectl(
            "get",
            "pod",
            "crash",
            "-o",
            "jsonpath={.status.containerStatuses[0].restartCount} {.status.phase} {.status.containerStatuses[0].ready}",
          )
        ).out.trim() === "1 Running true",
    );
    const prev = await kubectl("logs", "crash", "--previous");
    expect(prev.code, prev.err).toBe(0);
    expect(prev.out).toMatch(/^run-\d+\n$/);
  }, 90_000);

  it("get nodes and describe node", async () => {
    const n = await kubectl("get", "nodes", "-o", "wide");
    expect(n.out).toMatch(new RegExp(`\\n${NODE}\\s+Ready\\s+<none>\\s+\\S+\\s+v1\\.33\\.0\\s`));
    expect(n.out).toContain("containerd://");
    const d = await kubectl("describe", "node", NODE);
    expect(d.code, d.err).toBe(0);
    expect(d.out).toMatch(/Container Runtime Version:\s+containerd:\/\//);
    expect(d.out).toMatch(/Ready\s+True/);
    expect(d.out).toMatch(/DiskPressure\s+False\s.*KubeletHasNoDiskPressure\s+kubelet has no disk pressure/);
  }, 60_000);

  it("exec -- echo hi, and exec -it from a pseudo-terminal; a token minted without exec is refused", async () => {
    const hi = await kubectl("exec", "web", "--", "echo", "hi");
    expect(hi.code, hi.err).toBe(0);
    expect(hi.out).toBe("hi\n");
    const failing = await kubectl("exec", "web", "--", "sh", "-c", "echo oops >&2; exit 7");
    expect(failing.err).toContain("oops");
    expect(failing.err).toMatch(/exit code 7/);
    // util-linux script gives kubectl a pseudo-terminal, so -it negotiates a TTY end to end.
    const tty = await new Promise<{ code: number; out: string }>((res) =>
      execFile(
        "script",
        ["-qec", `${KUBECTL} exec -it web -- sh -c 'tty; echo tty-ok'`, "/dev/null"],
        { env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig") }, timeout: 60_000 },
        (e, out) => res({ code: e ? 1 : 0, out }),
      ),
    );
    expect(tty.out).toMatch(/\/dev\/pts\/\d+\r?\n/);
    expect(tty.out).toContain("tty-ok");
    const plain = await kubectl("--token", await sign({ act: "read" }), "exec", "web", "--", "echo", "hi");
    expect(plain.code).not.toBe(0);
    expect(plain.err).toMatch(/Forbidden.*does not allow exec/);
  }, 90_000);

  it("port-forward where the owner has not turned it on: 403 naming PODSYNC_ALLOW_PORT_FORWARD", async () => {
    const token = await sign({ act: "read", portForward: true });
    const r = await kubectl("--token", token, "port-forward", "pod/web", ":8080");
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/Forbidden|forbidden/);
    expect(r.err).toContain("PODSYNC_ALLOW_PORT_FORWARD=true");
  }, 60_000);

  it("deployments through the kubeconfig podsync makes (its plugin runs podsync token): get deploy,rs,pods, -o wide, describe deploy", async () => {
    writeFileSync(join(dir, "ca.pem"), running.tls!.caCert);
    const made = await podsync(
      "kubeconfig",
      "--server",
      running.tls!.url,
      "--key",
      join(dir, "dev-key.json"),
      "--node",
      NODE,
      "--ca",
      join(dir, "ca.pem"),
      "--namespace",
      APPS,
    );
    expect(made.code, made.err).toBe(0);
    writeFileSync(join(dir, "plugin.kubeconfig"), made.out);
    await until(
      "the Deployment's replica to be ready",
      async () =>
        (await kubectl("get", "deploy", "site", "-n", APPS, "-o", "jsonpath={.status.readyReplicas}")).out === "1",
    );
    const all = await kubectl("--kubeconfig", join(dir, "plugin.kubeconfig"), "get", "deploy,rs,pods");
    expect(all.code, all.err).toBe(0);
    expect(all.out).toMatch(/^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\ndeployment\.apps\/site\s+1\/1\s+1\s+1\s/);
    expect(all.out).toMatch(/\nNAME\s+DESIRED\s+CURRENT\s+READY\s+AGE\nreplicaset\.apps\/site-[a-z0-9]+\s+1\s+1\s+1\s/);
    expect(all.out).toMatch(/\npod\/site-[a-z0-9]+-[a-z0-9]{5}\s+1\/1\s+Running\s/);
    const wide = await kubectl("get", "deploy", "-n", APPS, "-o", "wide");
    expect(wide.out).toMatch(
      /^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR\nsite\s+1\/1\s+1\s+1\s+\S+\s+main\s+localhost\/busybox:1\s+app=site\n$/,
    );
    const d = await kubectl("describe", "deploy", "site", "-n", APPS);
    expect(d.code, d.err).toBe(0);
    expect(d.out).toMatch(/Replicas:\s+1 desired \| 1 updated \| 1 total \| 1 available \| 0 unavailable/);
    expect(d.out).toMatch(/NewReplicaSet:\s+site-[a-z0-9]+ \(1\/1 replicas created\)/);
    // The pod names its owner: kubectl describe pod shows "Controlled By".
    expect((await kubectl("describe", "pods", "-n", APPS, "-l", "app=site")).out).toMatch(
      /Controlled By:\s+ReplicaSet\/site-[a-z0-9]+/,
    );
  }, 120_000);

  it("kubectl get hpa,pdb: autoscaling/v2 and policy/v1 with upstream's columns", async () => {
    await syncItems([
      {
        apiVersion: "autoscaling/v2",
        kind: "HorizontalPodAutoscaler",
        metadata: { name: "site", namespace: APPS },
        spec: {
          scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "site" },
          minReplicas: 1,
          maxReplicas: 1,
        },
      },
      {
        apiVersion: "policy/v1",
        kind: "PodDisruptionBudget",
        metadata: { name: "site", namespace: APPS },
        spec: { minAvailable: 1, selector: { matchLabels: { app: "site" } } },
      },
    ]);
    const r = await kubectl("get", "hpa,pdb", "-n", APPS);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(
      /^NAME\s+REFERENCE\s+TARGETS\s+MINPODS\s+MAXPODS\s+REPLICAS\s+AGE\nhorizontalpodautoscaler\.autoscaling\/site\s+Deployment\/site\s+cpu: <unknown>\/80%\s+1\s+1\s/,
    );
    expect(r.out).toMatch(
      /\nNAME\s+MIN AVAILABLE\s+MAX UNAVAILABLE\s+ALLOWED DISRUPTIONS\s+AGE\npoddisruptionbudget\.policy\/site\s+1\s+N\/A\s/,
    );
    for (const kind of ["HorizontalPodAutoscaler", "PodDisruptionBudget"]) {
      const list = await (
        await fetch(`${running.url}/v1/workloads?kind=${kind}`, {
          headers: { authorization: `Bearer ${await sign({ act: "status" })}` },
        })
      ).json();
      const w = list.items.find((x: { metadata: { namespace: string } }) => x.metadata.namespace === APPS);
      await fetch(`${running.url}/v1/workloads/${w.metadata.uid}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${await sign({ act: "delete", uid: w.metadata.uid })}` },
      });
    }
  }, 60_000);

  it("delete and scale are refused, naming the signed way", async () => {
    const r = await kubectl("delete", "pod", "web");
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/Error from server \(Forbidden\): pods "web" is forbidden: .*podsync delete pods\/web /);
    expect((await kubectl("get", "pod", "web", "-o", "name")).out.trim()).toBe("pod/web");
    const scale = await kubectl("scale", "deploy", "site", "-n", APPS, "--replicas=2");
    expect(scale.code).not.toBe(0);
    expect(scale.err).toMatch(
      /Error from server \(Forbidden\): deployments\.apps "site" is forbidden: .*podsync apply/,
    );
  }, 60_000);
});
