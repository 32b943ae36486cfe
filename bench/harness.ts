// What the benches that run the shipped server share: its lab containerd, the server started as `npm start` starts it
// (the same node flags, read from package.json), a signer with its dev key, and the process figures (/proc).
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { importJWK, SignJWT, type JWK } from "jose";
import type { CriClient } from "../src/cri/client.js";
import { NamespaceMode, SecurityProfile_ProfileType } from "../src/gen/runtime/v1/api_pb.js";
import { listManagedPods } from "../src/kuberuntime/pod-status.js";
import { createRelister } from "../src/pleg/relist.js";
import { shippedNodeFlags } from "../src/cli/server-flags.js";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
/** The p-th percentile (nearest rank). */
export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
};
export const r2 = (n: number) => Math.round(n * 100) / 100;

/** node's own flags from `npm start`'s script, as it runs the server; BENCH_NODE_FLAGS overrides them
 * (space-separated; empty for none) to compare. */
export const NODE_FLAGS =
  process.env["BENCH_NODE_FLAGS"] !== undefined
    ? process.env["BENCH_NODE_FLAGS"].split(" ").filter(Boolean)
    : shippedNodeFlags("package.json");

/** Starts or stops the lab containerd in `dir`; start answers its socket path. */
export const lab = (dir: string, cmd: "start" | "stop") =>
  execFileSync("bash", ["scripts/containerd-lab.sh", cmd], {
    env: { ...process.env, PODSYNC_LAB_DIR: dir },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  })
    .trim()
    .split("\n")
    .pop() ?? "";

/** A process's CPU time in ms (utime + stime from /proc, clock ticks of 10 ms). */
export const procCpuMs = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8");
  const rest = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return (Number(rest[11]) + Number(rest[12])) * 10;
};
/** Fields of a process's /proc status given in kB, as MiB. */
const statusMiB = (pid: number, ...fields: string[]) => {
  const st = readFileSync(`/proc/${pid}/status`, "utf8");
  return fields.map((k) => {
    const m = new RegExp(`^${k}:\\s+(\\d+) kB`, "m").exec(st);
    if (!m) throw new Error(`/proc/${pid}/status has no ${k}`);
    return Number(m[1]) / 1024;
  });
};
export const rssMiB = (pid: number) => statusMiB(pid, "VmRSS")[0]!;
/** A process's resident memory by kind, MiB: anonymous (heap, stacks, malloc) and file-backed (node's binary,
 * libraries). */
export const rssParts = (pid: number) => {
  const [anon, file] = statusMiB(pid, "RssAnon", "RssFile");
  return { anon: r2(anon!), file: r2(file!) };
};
export const selfCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** Runs `fn` over `items` with at most `n` in flight. */
export async function pool<T>(items: T[], n: number, fn: (x: T) => Promise<void>) {
  let i = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (i < items.length) await fn(items[i++]!);
    }),
  );
}

export interface Server {
  proc: ChildProcess;
  pid: number;
  url: string;
  /** A token signed with the server's dev key for `claims`, audience the node, 4 minutes. */
  sign(claims: Record<string, unknown>): Promise<string>;
  /** A JSON request with a Bearer token for `claims`; anything but 2xx throws. */
  call<T>(method: string, path: string, claims: Record<string, unknown>, body?: string): Promise<T>;
  /** V8's heap from the server's /metrics, MiB: committed, used, external. */
  heap(): Promise<{ committed: number; used: number; external: number }>;
  /** PUT /v1/node/pods: `items` as the node's whole signed set at `generation`; anything but 2xx throws. */
  putSet(generation: number, items: unknown[]): Promise<void>;
}

/** The server as `npm start` runs it (dist/node.js with NODE_FLAGS) in `dir`, privileged policy, request log to a
 * file; resolves once it listens. `extraFlags`: node flags added for a measurement (`--cpu-prof`, which
 * NODE_OPTIONS does not take). */
export async function startServer(
  dir: string,
  endpoint: string,
  node: string,
  env: Record<string, string> = {},
  extraFlags: string[] = [],
) {
  const proc = spawn(process.execPath, [...NODE_FLAGS, ...extraFlags, "dist/node.js"], {
    env: {
      ...process.env,
      PODSYNC_CRI_ENDPOINT: endpoint,
      PODSYNC_PORT: "0",
      PODSYNC_NODE_NAME: node,
      PODSYNC_POLICY: "privileged",
      PODSYNC_DEV_DIR: join(dir, "dev"),
      PODSYNC_STATE_DIR: join(dir, "state"),
      PODSYNC_ROOT_DIR: join(dir, "root"),
      PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
      ...env,
    },
    stdio: ["ignore", openSync(join(dir, "requests.log"), "a"), "pipe"],
  });
  const url = await new Promise<string>((res, rej) => {
    let text = "";
    proc.stderr!.on("data", (b: Buffer) => {
      text += b.toString();
      const m = /listening on (http:\/\/\S+)/.exec(text);
      if (m) res(m[1]!);
    });
    proc.once("exit", (c) => rej(new Error(`the server exited (${c}): ${text}`)));
  });
  const key = JSON.parse(readFileSync(join(dir, "dev", "dev-key.json"), "utf8")) as JWK & { iss: string };
  const priv = await importJWK(key, "EdDSA");
  let jti = 0;
  const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  const sign = (claims: Record<string, unknown>) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "EdDSA", kid: key.kid! })
      .setIssuer(key.iss)
      .setAudience(node)
      .setIssuedAt()
      .setExpirationTime("4m")
      .setJti(`b-${tag}-${jti++}`)
      .sign(priv);
  const call = async <T>(method: string, path: string, claims: Record<string, unknown>, body?: string) => {
    const headers: Record<string, string> = { authorization: `Bearer ${await sign(claims)}` };
    if (body !== undefined) headers["content-type"] = "application/jose";
    const r = await fetch(`${url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await r.text();
    if (!r.ok) throw new Error(`${method} ${path} answered ${r.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text) as T;
  };
  const heap = async () => {
    const prom = await (await fetch(`${url}/metrics`)).text();
    const metric = (name: string) => r2(Number(new RegExp(`^${name} (\\S+)$`, "m").exec(prom)?.[1] ?? NaN) / 1048576);
    return {
      committed: metric("nodejs_heap_size_total_bytes"),
      used: metric("nodejs_heap_size_used_bytes"),
      external: metric("nodejs_external_memory_bytes"),
    };
  };
  const putSet = async (generation: number, items: unknown[]) => {
    const r = await fetch(`${url}/v1/node/pods`, {
      method: "PUT",
      headers: { "content-type": "application/jose" },
      body: await sign({ act: "apply", generation, pods: items }),
    });
    const text = await r.text();
    if (!r.ok) throw new Error(`PUT answered ${r.status}: ${text.slice(0, 300)}`);
  };
  mkdirSync("bench/results", { recursive: true });
  return { proc, pid: proc.pid!, url, sign, call, heap, putSet } satisfies Server;
}

/** CPU (ms, this process) of one relist of the node and of its 2 list calls alone, `n` of each alternated (a
 * change of load or a collection falls on both alike), after `warm` untimed pairs. */
export async function relistCpu(cri: CriClient, n: number, warm = 5): Promise<{ relist: number; lists: number }> {
  const relister = createRelister(cri);
  const interest = { wants: () => true, wantsStartTimes: () => false };
  for (let i = 0; i < warm; i++) {
    await relister.relist(interest, Date.now);
    await listManagedPods(cri);
  }
  let relist = 0;
  let lists = 0;
  for (let i = 0; i < n; i++) {
    let c0 = selfCpuMs();
    for (const v of (await relister.relist(interest, Date.now)).pods.values()) void v.status;
    relist += selfCpuMs() - c0;
    c0 = selfCpuMs();
    await listManagedPods(cri);
    lists += selfCpuMs() - c0;
  }
  return { relist: relist / n, lists: lists / n };
}

/** podman beside podsync: Debian's podman (installed with apt-get when missing) with a root of its own, the lab's
 * images loaded, the VM's lower rlimits and the lab's pause image as its infra container in CONTAINERS_CONF.
 * Answers a function that runs one podman command and answers its output. */
export function podmanCli(labDir: string): (...args: string[]) => string {
  try {
    execFileSync("podman", ["--version"], { stdio: "ignore" });
  } catch {
    execFileSync("apt-get", ["install", "-y", "--no-install-recommends", "podman"], {
      stdio: "inherit",
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
  }
  const root = join(tmpdir(), "podsync-podman-bench");
  mkdirSync(join(root, "tmp"), { recursive: true });
  const conf = join(root, "containers.conf");
  // The lab's pause image as podman's infra container (else podman builds one, which needs catatonit).
  writeFileSync(
    conf,
    '[containers]\ndefault_ulimits = ["nofile=1024:1024","nproc=4096:4096"]\n[engine]\ninfra_image = "localhost/pause:1"\n',
  );
  const env = { ...process.env, CONTAINERS_CONF: conf };
  const pm = (...args: string[]) =>
    execFileSync(
      "podman",
      ["--root", join(root, "root"), "--runroot", join(root, "run"), "--tmpdir", join(root, "tmp"), ...args],
      { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 },
    ).trim();
  const images = join(labDir, "images", "images.tar");
  if (!pm("images", "-q", "localhost/busybox:1"))
    pm("load", "-i", existsSync(images) ? images : resolve("/tmp/podsync-lab/images/images.tar"));
  return pm;
}

/** CPU ms of each of a process's threads by name (main thread, libuv-worker, V8's workers...), from /proc. */
export function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const f = `/proc/${pid}/task/${tid}/stat`;
    if (!existsSync(f)) continue;
    const stat = readFileSync(f, "utf8");
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const k = tid === String(pid) ? "main thread" : name;
    out.set(k, (out.get(k) ?? 0) + (Number(rest[11]) + Number(rest[12])) * 10);
  }
  return out;
}

/** One raw pod as podsync's pods are made (on the pod network, or the node's with `hostNetwork`): the runtime's
 * default seccomp profile, a busybox `sleep`, logs under `logRoot`; RunPodSandbox, CreateContainer,
 * StartContainer. Answers the two ids. */
export async function rawPod(
  cri: CriClient,
  logRoot: string,
  name: string,
  namespace: string,
  uid: string,
  o: { hostNetwork?: boolean } = {},
) {
  const seccomp = { profileType: SecurityProfile_ProfileType.RuntimeDefault };
  const linux = { securityContext: { seccomp } };
  const sandboxLinux = o.hostNetwork
    ? { securityContext: { namespaceOptions: { network: NamespaceMode.NODE }, seccomp } }
    : linux;
  const metadata = { name, namespace, uid, attempt: 0 };
  const config = { metadata, logDirectory: join(logRoot, uid), linux: sandboxLinux };
  mkdirSync(config.logDirectory, { recursive: true });
  const podSandboxId = (await cri.runPodSandbox({ config })).podSandboxId;
  const { containerId } = await cri.createContainer({
    podSandboxId,
    sandboxConfig: config,
    config: {
      metadata: { name: "main", attempt: 0 },
      image: { image: "localhost/busybox:1" },
      command: ["sleep", "360000"],
      logPath: "main/0.log",
      linux,
    },
  });
  await cri.startContainer({ containerId });
  return { podSandboxId, containerId };
}
