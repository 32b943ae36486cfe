// The CLI's workload verbs as a user drives them (issue 41): `node bin/podsync.mjs` against the Node server
// (startNode, dev key, file state) on the REAL containerd, whose controllers make the workloads' pods.
// get with several types and all (compared with kubectl's), logs TYPE/NAME, delete TYPE/NAME and TYPE NAME with
// --cascade, in kubectl's wording; the wording fixes (exec -it, no generation
// after a read). Fails, never skips, without a runtime (unless PODSYNC_SKIP_E2E=1).
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { importJWK, type JWK, SignJWT } from "jose";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Running } from "../../src/node.js";
import { until } from "../support/wait.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const dir = mkdtempSync(join(tmpdir(), "podsync-cli-workloads-e2e-"));
const NS = `cliwl-${Date.now().toString(36)}`;
let running: Running;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[]): Promise<Run> {
  return new Promise((res) =>
    execFile(
      process.execPath,
      ["bin/podsync.mjs", ...args],
      {
        env: {
          PATH: process.env["PATH"] ?? "",
          HOME: join(dir, "home"),
          PODSYNC_URL: running?.url ?? "",
          PODSYNC_KEY: join(dir, "dev-key.json"),
        },
      },
      (e, stdout, stderr) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

const deployment = (name: string, replicas = 1) =>
  [
    "apiVersion: apps/v1",
    "kind: Deployment",
    `metadata: { name: ${name}, namespace: ${NS} }`,
    "spec:",
    `  replicas: ${replicas}`,
    `  selector: { matchLabels: { app: ${name} } }`,
    "  template:",
    `    metadata: { labels: { app: ${name} } }`,
    "    spec:",
    "      terminationGracePeriodSeconds: 1",
    "      containers:",
    "        - name: main",
    "          image: localhost/busybox:1",
    "          imagePullPolicy: IfNotPresent",
    `          command: ["sh", "-c", "echo hello from $(hostname); sleep 3600"]`,
  ].join("\n");

const cronJob = [
  "apiVersion: batch/v1",
  "kind: CronJob",
  `metadata: { name: nightly, namespace: ${NS} }`,
  "spec:",
  `  schedule: "0 3 * * *"`,
  "  jobTemplate:",
  "    spec:",
  "      template:",
  "        spec:",
  "          restartPolicy: Never",
  "          containers:",
  "            - name: main",
  "              image: localhost/busybox:1",
  `              command: ["true"]`,
].join("\n");

const KUBECTL = process.env["PODSYNC_KUBECTL"] ?? "/usr/bin/kubectl";

/** kubectl against the node's Kubernetes API with a read token (as test/kubeapi/kubectl.e2e.test.ts sets it up). */
function kubectl(args: string[]): Promise<Run> {
  return new Promise((res) =>
    execFile(
      KUBECTL,
      args,
      { env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig") }, timeout: 60_000 },
      (e, stdout, stderr) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

async function writeKubeconfig(node: string): Promise<void> {
  const key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { alg: string };
  const token = await new SignJWT({ act: "read", exec: true })
    .setProtectedHeader({ alg: key.alg, ...(key.kid ? { kid: key.kid } : {}) })
    .setIssuer("podsync-dev")
    .setAudience(node)
    .setIssuedAt()
    .setExpirationTime("5m") // at most PODSYNC_MAX_TOKEN_LIFETIME_S
    .setJti(crypto.randomUUID())
    .sign(await importJWK(key, key.alg));
  if (!running.tls) throw new Error("the server serves no TLS");
  const cluster = {
    server: running.tls.url,
    "certificate-authority-data": Buffer.from(running.tls.caCert).toString("base64"),
  };
  writeFileSync(
    join(dir, "kubeconfig"),
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: node, cluster }],
      users: [{ name: "reader", user: { token } }],
      contexts: [{ name: node, context: { cluster: node, user: "reader", namespace: NS } }],
      "current-context": node,
    }),
  );
}

/** A table's header lines and first column (the names), without ages. */
const shape = (table: string) =>
  table
    .trimEnd()
    .split("\n")
    .map((l) => (l === "" ? "" : /^NAME\b/.test(l) ? l.split(/\s+/).join(" ") : l.split(/\s+/)[0]));

/** The names of the pods in NS, by `podsync get pods -o name`. */
const podNames = async () => (await cli(["get", "pods", "-n", NS, "-o", "name"])).stdout.split("\n").filter(Boolean);

beforeAll(async () => {
  if (skip) return;
  if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
  const { startNode } = await import("../../src/node.js");
  running = await startNode(
    {
      PODSYNC_CRI_ENDPOINT: endpoint,
      PODSYNC_SERVICE_DATAPLANE: "off",
      PODSYNC_PORT: "0",
      PODSYNC_NODE_NAME: "cli-wl-node",
      PODSYNC_DEV_DIR: dir,
      PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
      PODSYNC_ROOT_DIR: join(dir, "root"),
    },
    true,
  );
}, 180_000); // a node on a loaded machine can take over a minute to start

afterAll(async () => {
  if (skip || !endpoint || !running) return;
  // Whatever a failed test left: its workloads, then their pods, through the CLI itself.
  for (const t of ["deploy/wweb", "deploy/fg", "cj/nightly", "deploy/roll", "deploy/stuck"])
    await cli(["delete", t, "-n", NS]);
  await until("the test's pods to go", async () => (await podNames()).length === 0, 60_000, 500).catch(() => undefined);
  await running.close();
});

describe.skipIf(skip)("podsync workload verbs against a node", () => {
  it("get deploy,rs and all, logs TYPE/NAME, delete TYPE NAME and TYPE/NAME with --cascade, as kubectl does", async () => {
    const file = join(dir, "app.yaml");
    writeFileSync(file, [deployment("wweb"), deployment("fg", 2), cronJob].join("\n---\n"));
    const synced = await cli(["sync", file]);
    expect(synced.code, synced.stderr).toBe(0);
    await until(
      "a pod of each deployment",
      async () => {
        const names = await podNames();
        return (
          names.some((n) => n.startsWith("pod/wweb-")) && names.filter((n) => n.startsWith("pod/fg-")).length === 2
        );
      },
      60_000,
      300,
    );

    // get with several types and `all`: kubectl's tables, TYPE/NAME names, a blank line between tables.
    const two = await cli(["get", "deploy,rs", "-n", NS]);
    expect(two.code, two.stderr).toBe(0);
    expect(two.stdout).toMatch(/^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\ndeployment\.apps\/fg\s/);
    expect(two.stdout).toMatch(/\n\nNAME\s+DESIRED\s+CURRENT\s+READY\s+AGE\nreplicaset\.apps\/fg-/);
    const names = (await cli(["get", "deploy,rs", "-n", NS, "-o", "name"])).stdout.split("\n");
    expect(names.slice(0, 2)).toEqual(["deployment.apps/fg", "deployment.apps/wweb"]);
    const everything = await cli(["get", "all", "-n", NS]);
    expect(everything.code, everything.stderr).toBe(0);
    for (const n of ["pod/wweb-", "deployment.apps/wweb", "replicaset.apps/wweb-", "cronjob.batch/nightly"])
      expect(everything.stdout).toContain(n);
    expect(everything.stdout).not.toContain("statefulset"); // an empty type is left out
    expect((await cli(["get", "deploy,gadgets", "-n", NS])).stderr).toContain(
      'the server doesn\'t have a resource type "gadgets"',
    );
    // The same names and columns as kubectl's against the node's Kubernetes API.
    if (!existsSync(KUBECTL)) throw new Error(`kubectl is missing at ${KUBECTL} (set PODSYNC_KUBECTL)`);
    await writeKubeconfig("cli-wl-node");
    const k2 = await kubectl(["get", "deploy,rs", "-n", NS]);
    expect(k2.code, k2.stderr).toBe(0);
    expect(shape(two.stdout)).toEqual(shape(k2.stdout));
    expect((await kubectl(["get", "deploy,rs", "-n", NS, "-o", "name"])).stdout.split("\n")).toEqual(names);

    // logs TYPE/NAME: the workload's first pod; with several, kubectl's note on stderr.
    const one = await until(
      "wweb's log",
      async () => {
        const r = await cli(["logs", "deploy/wweb", "-n", NS]);
        return r.stdout.includes("hello from wweb-") && r;
      },
      60_000,
      500,
    );
    expect(one.stderr).toBe("");
    const prefixed = await cli(["logs", "deploy/wweb", "-n", NS, "--all-containers", "--prefix"]);
    expect(prefixed.code, prefixed.stderr).toBe(0);
    expect(prefixed.stdout).toMatch(/^\[pod\/wweb-[^/\s]+\/main\] hello from wweb-/);
    expect((await cli(["logs", "deploy/wweb", "-n", NS, "--prefix"])).stdout).toMatch(/^\[pod\/wweb-[^/\s]+\/main\] /);
    expect((await cli(["logs", "deploy/wweb", "-n", NS, "--all-containers", "-c", "main"])).stderr).toContain(
      "--all-containers=true should not be specified with a container name",
    );
    const many = await cli(["logs", "deployment/fg", "-n", NS]);
    expect(many.code, many.stderr).toBe(0);
    expect(many.stderr).toMatch(/^Found 2 pods, using pod\/fg-\S+\n$/);
    expect((await cli(["logs", "deploy/nope", "-n", NS])).stderr).toContain('deployments.apps "nope" not found');

    // orphan is refused before anything is deleted.
    const orphan = await cli(["delete", "deploy", "wweb", "-n", NS, "--cascade=orphan"]);
    expect(orphan).toMatchObject({ code: 1, stdout: "" });
    expect(orphan.stderr).toContain("--cascade=orphan is not supported by this node");
    expect(orphan.stderr).toContain("nothing was deleted");
    expect((await cli(["get", "deploy", "wweb", "-n", NS, "-o", "name"])).stdout).toBe(
      "deployment.apps/wweb\n", // kubectl's -o name, with the API group
    );

    const bad = await cli(["delete", "deploy", "wweb", "-n", NS, "--cascade=sideways"]);
    expect(bad.stderr).toContain('--cascade must be "background", "foreground", or "orphan"');
    const none = await cli(["delete", "deploy", "nope", "-n", NS]);
    expect(none).toMatchObject({ code: 1, stdout: "" });
    expect(none.stderr).toContain(`deployments.apps "nope" not found in namespace "${NS}"`);
    const noName = await cli(["delete", "deploy", "-n", NS]);
    expect(noName).toMatchObject({ code: 1, stdout: "" });
    expect(noName.stderr).toContain("delete deploy needs a name");
    const noType = await cli(["delete", "gadget/x", "-n", NS]);
    expect(noType.stderr).toContain('the server doesn\'t have a resource type "gadget"');
    expect(noType.stderr).toContain("delete knows pod, deployment, replicaset, statefulset, daemonset, job, cronjob,");
    expect(noType.stderr).toContain(" service,");

    // The issue's own command: TYPE NAME, background (the default); the pods go at the controllers' next pass.
    const wweb = await cli(["delete", "deploy", "wweb", "-n", NS]);
    expect(wweb, wweb.stderr).toMatchObject({ code: 0, stdout: 'deployment.apps "wweb" deleted\n' });
    expect((await cli(["get", "deploy", "wweb", "-n", NS])).code).toBe(1);
    await until(
      "wweb's pods to go",
      async () => !(await podNames()).some((n) => n.startsWith("pod/wweb-")),
      60_000,
      300,
    );
    // Its ReplicaSet went with it.
    expect((await cli(["get", "rs", "-n", NS, "-o", "name"])).stdout).not.toContain("wweb");

    // TYPE/NAME, foreground: answers once its ReplicaSet and pods are gone too.
    const fg = await cli(["delete", "deployment/fg", "-n", NS, "--cascade=foreground"]);
    expect(fg, fg.stderr).toMatchObject({ code: 0, stdout: 'deployment.apps "fg" deleted\n' });
    expect((await podNames()).filter((n) => n.startsWith("pod/fg-"))).toEqual([]);
    expect((await cli(["get", "rs", "-n", NS, "-o", "name"])).stdout).not.toContain("fg-");

    const cj = await cli(["delete", "cj/nightly", "-n", NS]);
    expect(cj, cj.stderr).toMatchObject({ code: 0, stdout: 'cronjob.batch "nightly" deleted\n' });
    expect((await cli(["get", "cronjobs", "-n", NS, "-o", "name"])).stdout).toBe("");
  }, 240_000);

  it("scale, rollout status|restart|history|undo|pause|resume and describe, as kubectl's", async () => {
    const file = join(dir, "roll.yaml");
    const stuck = deployment("stuck").replace(
      "          imagePullPolicy: IfNotPresent",
      '          imagePullPolicy: IfNotPresent\n          readinessProbe: { exec: { command: ["false"] }, periodSeconds: 1 }',
    );
    // roll's pods read a ConfigMap and a Secret sent in the same file: scale, restart and undo re-sign the
    // Deployment alone, and the node keeps the two with it (its pods would wait for them otherwise).
    const roll = deployment("roll", 1)
      .replace("echo hello from $(hostname)", "echo hello from $(hostname) $GREETING $PASS")
      .replace(
        "          imagePullPolicy: IfNotPresent",
        [
          "          imagePullPolicy: IfNotPresent",
          "          env:",
          "            - { name: GREETING, valueFrom: { configMapKeyRef: { name: roll-cfg, key: greeting } } }",
          "            - { name: PASS, valueFrom: { secretKeyRef: { name: roll-secret, key: pass } } }",
        ].join("\n"),
      );
    const objects = [
      `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: roll-cfg, namespace: ${NS} }\ndata: { greeting: hi-cfg }`,
      `apiVersion: v1\nkind: Secret\nmetadata: { name: roll-secret, namespace: ${NS} }\nstringData: { pass: s3cret }`,
    ];
    writeFileSync(file, [roll, stuck, ...objects].join("\n---\n"));
    const synced = await cli(["sync", file]);
    expect(synced.code, synced.stderr).toBe(0);
    const done = await cli(["rollout", "status", "deploy/roll", "-n", NS, "--timeout=90s"]);
    expect(done, done.stderr).toMatchObject({ code: 0 });
    expect(done.stdout).toMatch(/deployment "roll" successfully rolled out\n$/);
    // Never ready: kubectl's waiting message, then the timeout (exit 1).
    const late = await cli(["rollout", "status", "deployment", "stuck", "-n", NS, "--timeout=2s"]);
    expect(late.code).toBe(1);
    expect(late.stdout).toContain('Waiting for deployment "stuck" rollout to finish:');
    expect(late.stderr).toContain("timed out waiting for the condition");
    const once = await cli(["rollout", "status", "deploy/stuck", "-n", NS, "--watch=false"]);
    expect(once.code).toBe(0);
    expect(once.stdout.trim().split("\n")).toHaveLength(1);

    // scale: kubectl's words, its precondition, and the pods follow.
    const scaled = await cli(["scale", "deploy/roll", "--replicas=2", "-n", NS]);
    expect(scaled, scaled.stderr).toMatchObject({ code: 0, stdout: "deployment.apps/roll scaled\n" });
    const pre = await cli(["scale", "deploy", "roll", "--replicas=3", "--current-replicas=1", "-n", NS]);
    expect(pre.code).toBe(1);
    expect(pre.stderr).toContain("Expected replicas to be 1, was 2");
    expect((await cli(["scale", "cj/nightly", "--replicas=1", "-n", NS])).stderr).toContain(
      "scale does not take a CronJob",
    );
    expect((await cli(["rollout", "status", "deploy/roll", "-n", NS, "--timeout=90s"])).code).toBe(0);
    expect((await podNames()).filter((n) => n.startsWith("pod/roll-"))).toHaveLength(2);

    // restart: a new ReplicaSet (revision 2); history as kubectl prints it.
    const restarted = await cli(["rollout", "restart", "deploy/roll", "-n", NS]);
    expect(restarted, restarted.stderr).toMatchObject({ code: 0, stdout: "deployment.apps/roll restarted\n" });
    expect((await cli(["rollout", "status", "deploy/roll", "-n", NS, "--timeout=90s"])).code).toBe(0);
    const history = await cli(["rollout", "history", "deploy/roll", "-n", NS]);
    expect(history.stdout).toBe(
      "deployment.apps/roll \nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n\n",
    );
    await writeKubeconfig("cli-wl-node");
    const kh = await kubectl(["rollout", "history", "deploy/roll", "-n", NS]);
    expect(kh.code, kh.stderr).toBe(0);
    expect(history.stdout).toBe(kh.stdout);
    const kd = await kubectl(["rollout", "status", "deploy/roll", "-n", NS, "--watch=false"]);
    expect((await cli(["rollout", "status", "deploy/roll", "-n", NS, "--watch=false"])).stdout).toBe(kd.stdout);

    // describe: kubectl's fields, in kubectl's order.
    const described = await cli(["describe", "deployment/roll", "-n", NS]);
    expect(described.code, described.stderr).toBe(0);
    const fields = (t: string) => t.split("\n").flatMap((l) => /^([A-Z][\w -]*):/.exec(l)?.[1] ?? []);
    const kdesc = await kubectl(["describe", "deployment/roll", "-n", NS]);
    expect(kdesc.code, kdesc.stderr).toBe(0);
    expect(fields(described.stdout)).toEqual(fields(kdesc.stdout));
    expect(described.stdout).toMatch(
      /^Replicas:\s+2 desired \| 2 updated \| 2 total \| 2 available \| 0 unavailable$/m,
    );
    expect(described.stdout).toMatch(/^NewReplicaSet:\s+roll-\S+ \(2\/2 replicas created\)$/m);

    // pause and resume; undo goes back to revision 1's template, which becomes revision 3.
    expect((await cli(["rollout", "pause", "deploy/roll", "-n", NS])).stdout).toBe("deployment.apps/roll paused\n");
    expect((await cli(["rollout", "pause", "deploy/roll", "-n", NS])).stdout).toBe(
      "deployment.apps/roll already paused\n",
    );
    const pausedUndo = await cli(["rollout", "undo", "deploy/roll", "-n", NS]);
    expect(pausedUndo.stderr).toContain("you cannot rollback a paused deployment");
    expect((await cli(["rollout", "resume", "deploy/roll", "-n", NS])).stdout).toBe("deployment.apps/roll resumed\n");
    const undone = await cli(["rollout", "undo", "deploy/roll", "-n", NS]);
    expect(undone, undone.stderr).toMatchObject({ code: 0, stdout: "deployment.apps/roll rolled back\n" });
    expect((await cli(["rollout", "status", "deploy/roll", "-n", NS, "--timeout=90s"])).code).toBe(0);
    await until(
      "revision 1 to become 3",
      async () =>
        (await cli(["rollout", "history", "deploy/roll", "-n", NS])).stdout.includes("\n2         <none>\n3 "),
      30_000,
      300,
    );
    const again = await cli(["rollout", "undo", "deploy/roll", "-n", NS, "--to-revision=3"]);
    expect(again.stdout).toBe("deployment.apps/roll skipped rollback (current template already matches revision 3)\n");
    expect((await cli(["rollout", "undo", "deploy/roll", "-n", NS, "--to-revision=9"])).stderr).toContain(
      "unable to find specified revision 9 in history",
    );
    expect((await cli(["rollout", "history", "sts/roll", "-n", NS])).stderr).toContain(
      "rollout history does not take a StatefulSet",
    );
    // The undone pods still see the ConfigMap and the Secret.
    await until(
      "roll's log with the ConfigMap's and the Secret's values",
      async () => (await cli(["logs", "deploy/roll", "-n", NS])).stdout.includes(" hi-cfg s3cret"),
      30_000,
      300,
    );
    for (const d of ["deploy/roll", "deploy/stuck"]) await cli(["delete", d, "-n", NS]);
  }, 300_000);

  it("words: exec -it points to kubectl exec -it; a read prints no generation", async () => {
    const it = await cli(["exec", "-it", "web", "--", "sh"]);
    expect(it.code).toBe(1);
    expect(it.stderr).toContain("kubectl exec -it");
    expect(it.stderr).not.toContain("crictl");
    const pods = await cli(["get", "pods", "-n", NS]);
    expect(pods.code, pods.stderr).toBe(0);
    expect(pods.stderr).not.toContain("generation");
  });
});
