// One node's engine on Workers (its cri-proxy over gRPC-Web, the per-pod lease, the isolate's pull back-off),
// and the sealed view of its desired state; shared by the node's routes and its reconcile alarm.
import { MemoryPullBackOff } from "../container/backoff.js";
import type { CriClient } from "../cri/client.js";
import { connectGrpcWeb } from "../cri/grpc-web-transport.js";
import { proxyLogFiles } from "../host/logs/proxy-log-files.js";
import { ProblemError } from "../usecases/problems.js";
import { createPodRuntime, type PodRuntime } from "../kubelet/pod-runtime.js";
import type { DesiredState } from "../pleg/desired-state.js";
import { nodeConfigFrom } from "../settings/common.js";
import { nodeInfoFrom, withNodeOverrides } from "../settings/node-info.js";
import { SealedDesiredState } from "../state/sealed-desired-state.js";
import { importSealKey } from "../state/secret-seal.js";
import { createVerifier, type Algorithm, type Verifier } from "../auth/verify.js";
import { DurablePodLock } from "./pod-lock.js";
import { DurableReplayStore } from "./replay-store.js";
import type { Env, WorkerConfig } from "./settings.js";

/** One node's engine, as both the node's HTTP routes and its reconcile alarm use it: its cri-proxy over
 * gRPC-Web, the per-pod lease (a Durable Object per node/pod, so a request and the alarm never act on one pod
 * at once), and this isolate's pull back-off. Undefined for a node PODSYNC_NODES does not name. */
export function nodeRuntime(
  env: Env,
  s: WorkerConfig,
  name: string,
): { cri: CriClient; runtime: PodRuntime } | undefined {
  const cfg = s.PODSYNC_NODES[name];
  if (!cfg) return undefined;
  const tokens = s.PODSYNC_PROXY_TOKENS ? (JSON.parse(s.PODSYNC_PROXY_TOKENS) as Record<string, string>) : {};
  const proxyToken = tokens[name] ?? s.PODSYNC_PROXY_TOKEN;
  // A Worker has no resolv.conf of the node's; dnsPolicy Default gets the cluster settings only.
  const base = nodeConfigFrom(s, { dns: { servers: [], searches: [], options: [] }, memoryBytes: 8 * 2 ** 30 });
  const node = { ...base, nodeName: name, ...nodeAllocatable(nodeInfoFrom(withNodeOverrides(s, cfg), name, {})) };
  const cri = connectGrpcWeb({ baseUrl: cfg.url, token: proxyToken, timeoutMs: s.PODSYNC_CRI_TIMEOUT_MS });
  const runtime = createPodRuntime(cri, {
    node,
    // Logs are read through the proxy's log endpoint; exec goes through ExecSync when the proxy allows it.
    logFiles: proxyLogFiles({ baseUrl: cfg.url, token: proxyToken, timeoutMs: s.PODSYNC_CRI_TIMEOUT_MS }),
    pullTimeoutMs: s.PODSYNC_CRI_PULL_TIMEOUT_MS,
    lock: new DurablePodLock(env.POD_LOCK, name, s.PODSYNC_LOCK_WAIT_MS),
    // Per isolate: the one piece of sync state with no runtime record (see backoff.ts).
    pullBackOff: new MemoryPullBackOff(),
  });
  return { cri, runtime };
}

/** Secrets are stored sealed, never in clear in the Durable Object; the routes and the node's alarm loop both
 * read the set through this. */
export const sealed = (inner: DesiredState, s: WorkerConfig) => new SealedDesiredState(inner, () => sealKey(s));

/** The key Secrets are sealed with at rest (PODSYNC_SECRETS_KEY); without it a pod or workload that brings Secrets
 * is refused. */
export const sealKey = (s: WorkerConfig): Promise<CryptoKey> =>
  s.PODSYNC_SECRETS_KEY
    ? importSealKey(s.PODSYNC_SECRETS_KEY)
    : Promise.reject(
        new ProblemError(
          "misconfigured",
          "PODSYNC_SECRETS_KEY is not set: this Worker stores the Secrets signed with a pod or workload only sealed, so it cannot take those that bring Secrets",
        ),
      );

/** The downward API's defaults for a missing limit: the node's allocatable where the owner set it. */
const nodeAllocatable = (info: { allocatable: { milliCPU?: number | undefined; memory?: number | undefined } }) => ({
  ...(info.allocatable.milliCPU !== undefined ? { cpuCapacity: info.allocatable.milliCPU / 1000 } : {}),
  ...(info.allocatable.memory !== undefined ? { memoryCapacity: info.allocatable.memory } : {}),
});

/** The node's token verifier: the trusted keys and issuers, the node's name and aliases as audience, replay
 * protection in the node's ReplayGuard object. Undefined for a node PODSYNC_NODES does not name. */
export function nodeVerifier(env: Env, s: WorkerConfig, name: string): Verifier | undefined {
  const cfg = s.PODSYNC_NODES[name];
  if (!cfg) return undefined;
  return createVerifier({
    keys: s.PODSYNC_JWKS ? { jwks: JSON.parse(s.PODSYNC_JWKS) } : { url: s.PODSYNC_JWKS_URL! },
    issuers: s.PODSYNC_ISSUERS,
    audience: [name, ...cfg.aliases],
    algorithms: s.PODSYNC_ALGORITHMS as Algorithm[],
    maxLifetimeSeconds: s.PODSYNC_MAX_TOKEN_LIFETIME_S,
    clockSkewSeconds: s.PODSYNC_CLOCK_SKEW_S,
    replay: new DurableReplayStore(env.REPLAY, name),
  });
}
