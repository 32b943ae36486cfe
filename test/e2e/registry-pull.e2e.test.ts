// Real image pulls with registry credentials: the HTTP function in front of a REAL containerd pulling from a
// REAL registry on 127.0.0.1 (scripts/registry-lab.sh: Debian's docker-registry with htpasswd auth, the lab
// image pushed with skopeo). Fails, never skips, when the registry cannot be had (unless PODSYNC_SKIP_E2E=1).
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { Harness } from "../support/http.js";
import { uid } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const script = fileURLToPath(new URL("../../scripts/registry-lab.sh", import.meta.url));
const socketPath = endpoint.replace(/^unix:\/\//, "");
// The lab whose image tarball `push` reads: the one serving this socket, unless told.
const labDir = process.env.PODSYNC_LAB_DIR ?? dirname(socketPath);

let cri: CriClient;
let h: Harness;
let registry = "";
let user = "";
let password = "";
let hostsDir = "";
const WRONG = `wrong-${Math.random().toString(36).slice(2, 14)}`;
const uids: string[] = [];
/** Everything the function said: response bodies, its request log, and what reached stdout/stderr. */
const said: string[] = [];
const restore: (() => void)[] = [];
let spies: { mock: { calls: unknown[][] }; mockRestore(): void }[] = [];

function lab(...args: string[]): string {
  const run = spawnSync("bash", [script, ...args], {
    encoding: "utf8",
    timeout: 600_000, // a first start installs docker-registry, skopeo and apache2-utils
    env: { ...process.env, PODSYNC_LAB_DIR: labDir, PODSYNC_REGISTRY_HOSTS_DIR: hostsDir },
  });
  if (run.status !== 0)
    throw new Error(
      `scripts/registry-lab.sh ${args.join(" ")} failed: ${run.error ?? ""}${run.stderr.trim() || `exit ${run.status ?? run.signal}`}`,
    );
  return run.stdout.trim().split("\n").pop() ?? "";
}

/** A new image ref in the registry (a tag nobody pulled yet: IfNotPresent must pull it too). */
function push(): string {
  return lab("push", `podsync/busybox:${uid("t")}`);
}

type CredForm = "inline" | "inline-auth" | "named" | "none";
/** imagePullSecrets for the lab registry: inline (username/password, or base64 `auth`), or a named
 * kubernetes.io/dockerconfigjson Secret signed with the pod. */
function credentials(
  form: CredForm,
  pass = password,
): { imagePullSecrets?: unknown[]; claims: Record<string, unknown> } {
  const auths = {
    [registry]: form === "inline" ? { username: user, password: pass } : { auth: btoa(`${user}:${pass}`) },
  };
  if (form === "none") return { claims: {} };
  if (form !== "named") return { imagePullSecrets: [{ auths }], claims: {} };
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "regcred", namespace: "default" },
    type: "kubernetes.io/dockerconfigjson",
    data: { ".dockerconfigjson": btoa(JSON.stringify({ auths })) },
  };
  return { imagePullSecrets: [{ name: "regcred" }], claims: { secrets: [secret] } };
}

function podBody(image: string, imagePullPolicy: "Always" | "IfNotPresent", form: CredForm, pass?: string) {
  const id = uid("reg");
  uids.push(id);
  const { imagePullSecrets, claims } = credentials(form, pass);
  const pod = {
    metadata: { name: `p-${id.slice(-12).replace(/[^a-z0-9]/g, "")}`, namespace: "default", uid: id },
    spec: {
      terminationGracePeriodSeconds: 1,
      ...(imagePullSecrets ? { imagePullSecrets } : {}),
      containers: [{ name: "main", image, imagePullPolicy, command: ["sleep", "3600"] }],
    },
  };
  return { pod, claims };
}

async function sync(body: { pod: unknown; claims: Record<string, unknown> }) {
  const token = await h.sign({ act: "sync", pod: body.pod, ...body.claims });
  const r = await h.fetch("/v1/pods/sync", {
    method: "POST",
    headers: { "content-type": "application/jose" },
    body: token,
  });
  said.push(JSON.stringify(r.body));
  return r;
}

async function getPod(id: string) {
  const r = await h.fetch(`/v1/pods/${id}`, {
    headers: { authorization: `Bearer ${await h.sign({ act: "status", uid: id })}` },
  });
  said.push(JSON.stringify(r.body));
  return r;
}

const start = (r: { body: any }) =>
  (r.body.steps as { action: string; ok: boolean; error?: string; message?: string }[]).find(
    (s) => s.action === "StartContainer",
  )!;
const waiting = (r: { body: any }) =>
  r.body.status.containerStatuses[0].state.waiting as { reason: string; message?: string } | undefined;

/** Credentials that work: the pod runs, and the sync's step says the image was pulled. */
async function pullsWith(form: CredForm) {
  const image = push();
  const r = await sync(podBody(image, "IfNotPresent", form));
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(start(r).message).toMatch(new RegExp(`^Successfully pulled image "${image}" in \\S+; started `));
  // imageID is the repo digest the registry served (containerd's ContainerStatus imageRef after a pull).
  expect(r.body.status.containerStatuses[0]).toMatchObject({
    image,
    imageID: expect.stringMatching(
      new RegExp(`^${registry.replace(/\./g, "\\.")}/podsync/busybox@sha256:[0-9a-f]{64}$`),
    ),
    state: { running: {} },
  });
}

describe.skipIf(skip)("image pulls from a registry with credentials, on real containerd", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 60_000 });
    // Where this containerd reads registry hosts (CRI registry.config_path); the registry's hosts.toml goes there.
    const config = JSON.parse((await cri.status({ verbose: true })).info["config"] ?? "{}") as {
      registry?: { configPath?: string };
    };
    hostsDir = (config.registry?.configPath ?? "").split(":")[0] ?? "";
    registry = lab("start");
    const creds = JSON.parse(
      readFileSync(`${process.env.PODSYNC_REGISTRY_DIR ?? "/tmp/podsync-registry"}/credentials.json`, "utf8"),
    ) as { username: string; password: string };
    [user, password] = [creds.username, creds.password];
    h = await Harness.start(cri, { log: (rec) => said.push(JSON.stringify(rec)) });
    for (const stream of [process.stdout, process.stderr]) {
      const write = stream.write.bind(stream);
      stream.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
        said.push(String(chunk));
        return write(chunk, ...rest);
      }) as typeof stream.write;
      restore.push(() => (stream.write = write));
    }
    spies = (["log", "info", "warn", "error", "debug"] as const).map((m) => vi.spyOn(console, m));
    restore.push(() => {
      for (const s of spies) s.mockRestore();
    });
  }, 660_000);

  afterAll(async () => {
    for (const r of restore) r();
    const rt = cri && createPodRuntime(cri);
    await Promise.all(uids.map((id) => rt?.delete(id, 1).catch(() => undefined)));
    // The pulled images go: their tags, the repo digests and the image-id refs CRI adds (podsync's CRI client has
    // no RemoveImage), so the lab keeps only its own images.
    if (registry && cri) {
      const ctr = (...a: string[]) =>
        spawnSync("ctr", ["-a", socketPath, "-n", "k8s.io", ...a], { encoding: "utf8", timeout: 30_000 });
      const refs = (ctr("images", "ls", "-q").stdout ?? "")
        .split("\n")
        .filter((r) => r.startsWith(`${registry}/podsync/`));
      const idOf = async (image: string) =>
        (await cri.imageStatus({ image: { image } }).catch(() => undefined))?.image?.id;
      const ids = new Set(await Promise.all(refs.filter((r) => !r.includes("@")).map(idOf)));
      ids.delete(await idOf("localhost/busybox:1")); // never the lab's own (the pushed images have ids of their own)
      const gone = [...refs, ...[...ids].filter((id): id is string => !!id)];
      if (gone.length) ctr("images", "rm", ...gone);
    }
    await h?.close();
    cri?.close();
    lab("stop"); // safe when start failed half-way, or never ran
  });

  it("the registry listens on 127.0.0.1 only; the lab's containerd reads its hosts.toml (config_path): plain http on loopback", () => {
    expect(
      hostsDir,
      "containerd has no registry config_path: restart its lab with the current scripts/containerd-lab.sh",
    ).not.toBe("");
    expect(readFileSync(`${hostsDir}/${registry}/hosts.toml`, "utf8")).toContain(`server = "http://${registry}"`);
    expect(registry).toMatch(/^127\.0\.0\.1:\d+$/);
    // Listening on loopback only: every listening socket on its port is 127.0.0.1's (/proc/net/tcp[6], state 0A).
    const port = Number(registry.split(":")[1]).toString(16).toUpperCase().padStart(4, "0");
    const listening = ["/proc/net/tcp", "/proc/net/tcp6"]
      .flatMap((f) => readFileSync(f, "utf8").split("\n").slice(1))
      .map((l) => l.trim().split(/\s+/))
      .filter((c) => c[1]?.endsWith(`:${port}`) && c[3] === "0A")
      .map((c) => c[1]!.split(":")[0]);
    expect(listening).toEqual(["0100007F"]);
  });

  it("IfNotPresent pulls a new ref once (inline username/password), then finds it present and pulls no more", async () => {
    const image = push();
    const first = await sync(podBody(image, "IfNotPresent", "inline"));
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(start(first).message).toMatch(new RegExp(`^Successfully pulled image "${image}" in \\S+; started `));
    // A second pod on the same ref, with no credentials at all: nothing is asked of the registry.
    const second = await sync(podBody(image, "IfNotPresent", "none"));
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(start(second).message).toMatch(
      new RegExp(`^Container image "${image}" already present on machine; started `),
    );
    expect(second.body.status.containerStatuses[0].imageID).toBe(first.body.status.containerStatuses[0].imageID);
  });

  it("Always pulls on every start, even when the image is present (base64 `auth` credentials)", async () => {
    const image = push();
    for (let i = 0; i < 2; i++) {
      const r = await sync(podBody(image, "Always", "inline-auth"));
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(start(r).message).toMatch(new RegExp(`^Successfully pulled image "${image}" in \\S+; started `));
    }
  });

  it("credentials from an inline pull secret work", () => pullsWith("inline"));
  it("credentials from a named Secret signed with the pod work", () => pullsWith("named"));

  it("no credentials: ErrImagePull (the registry's 401)", async () => {
    const r = await sync(podBody(push(), "IfNotPresent", "none"));
    expect(r.status).toBe(207);
    expect(start(r)).toMatchObject({
      ok: false,
      error: "ErrImagePull",
      message: expect.stringContaining("401 Unauthorized"),
    });
    expect(waiting(r)).toMatchObject({ reason: "ErrImagePull", message: expect.stringContaining("401 Unauthorized") });
  });

  it("a wrong password: ErrImagePull, then ImagePullBackOff on the next sync", async () => {
    const body = podBody(push(), "Always", "inline", WRONG);
    const r1 = await sync(body);
    expect(r1.status).toBe(207);
    expect(start(r1)).toMatchObject({
      ok: false,
      error: "ErrImagePull",
      message: expect.stringContaining("401 Unauthorized"),
    });
    expect(waiting(r1)?.reason).toBe("ErrImagePull");
    const r2 = await sync(body);
    expect(r2.status).toBe(207);
    expect(start(r2)).toMatchObject({ ok: false, error: "ImagePullBackOff" });
    expect(waiting(r2)).toMatchObject({
      reason: "ImagePullBackOff",
      message: expect.stringMatching(/^Back-off pulling image /),
    });
    const pod = await getPod((body.pod as { metadata: { uid: string } }).metadata.uid);
    expect(pod.status).toBe(200);
    expect(pod.body.status.containerStatuses[0].state.waiting.reason).toBe("ImagePullBackOff");
  });

  it("no password, right or wrong, reaches a response body, the request log, stdout or stderr", async () => {
    // Every pod synced above, read back as a v1.Pod (the spec as given: its pull secrets must come back without credentials).
    for (const id of uids) await getPod(id);
    const all = [...said, ...spies.flatMap((s) => s.mock.calls.map((c) => c.map(String).join(" ")))].join("\n");
    expect(all).toContain('"route":"/v1/pods/sync"'); // the request log is in what was captured
    expect(all).toContain("401 Unauthorized"); // and the failed pulls' messages
    for (const secret of [password, WRONG, btoa(`${user}:${password}`), btoa(`${user}:${WRONG}`)])
      expect(all).not.toContain(secret);
  });
});
