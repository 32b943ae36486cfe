// The embedded default: the function on Node, on localhost, talking to the node's runtime socket.
// `npm start` runs this. With no keys configured it makes a dev key on first run and prints how to use it.
import { X509Certificate } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { statfs } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { getRequestListener, serve, type ServerType } from "@hono/node-server";
import { isIP, type Server } from "node:net";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { JSONWebKeySet } from "jose";
import { createApp, type AppOptions } from "./http/app.js";
import { templateRefusal } from "./http/admission.js";
import { FleetSettingsError, startFleetLink } from "./http/fleet/node-link.js";
import { GrpcTransport } from "./cri/grpc-transport.js";
import { createCriClient } from "./cri/client.js";
import { watchContainerEvents } from "./cri/container-events.js";
import type { VersionResponse } from "./gen/runtime/v1/api_pb.js";
import { createVerifier, type Algorithm } from "./auth/verify.js";
import { FileReplayStore } from "./state/used-jtis.js";
import { FileDesiredState } from "./state/desired-pods.js";
import { SealedDesiredState } from "./state/sealed-desired-state.js";
import { loadSealKey } from "./state/seal-key.js";
import type { StateUnavailableError } from "./pleg/state-unavailable.js";
import { StateDirInUseError, StateDirLock } from "./state/state-dir-lock.js";
import { generateSigningKey } from "./auth/keys.js";
import { MemoryPodLock } from "./kuberuntime/pod-lock.js";
import { createPodRuntime, type SyncResult } from "./kubelet/pod-runtime.js";
import { PodStatusCache } from "./container/cache.js";
import type { Pod } from "./pod/schema.js";
import { nodeConfigFrom, RELIST_INTERVAL_DEFAULT_MS } from "./settings/common.js";
import { nodePolicy } from "./auth/policy.js";
import { nodeInfoFrom } from "./settings/node-info.js";
import { nodeLogFiles } from "./host/log-files.js";
import { nodeTerminationFiles } from "./host/termination-files.js";
import { nodeVolumeFiles } from "./host/volume-files.js";
import { isKubePath } from "./kubeapi/paths.js";
import { toKubeStatus } from "./kubeapi/status.js";
import { ProblemError } from "./http/problems.js";
import type { RequestLog } from "./http/request-log.js";
import { RvClock, WatchHub } from "./kubeapi/watch-hub.js";
import { EventRecorder, recordingEvents } from "./kubeapi/events.js";
import { nodeObject, type V1Node } from "./kubeapi/node-object.js";
import { createPodFeed } from "./kubeapi/pod-feed.js";
import { createWorkloadFeed } from "./kubeapi/kinds/workload-feed.js";
import type { V1Pod } from "./status/api-status.js";
import { dualListener, type DualListener } from "./host/dual-listener.js";
import { loadOrMakeServingCert } from "./host/serving-cert.js";
import { machineFacts } from "./host/node-facts.js";
import { hostAppArmorEnabled, nodeVolumeHost } from "./host/volume-host.js";
import { canonicalRootDir } from "./host/mounts.js";
import { nodePodDirs } from "./host/pod-dirs.js";
import { nodeHostIPs, nodeProbeNetwork } from "./host/probe-network.js";
import { nodeDiskUsage } from "./host/disk-usage.js";
import { bytes } from "./pod/quantity.js";
import { createProber, MemoryProbeStateStore, type ProbeStateStore } from "./prober/prober.js";
import { startReconcileLoop } from "./pleg/loop.js";
import { instrumentRuntime } from "./metrics/metrics.js";
import { createPromMetrics } from "./host/metrics.js";
import { FileProbeStateStore } from "./state/probe-state.js";
import { FileWorkloadStore } from "./state/workloads.js";
import { createControllers } from "./controllers/run.js";
import { criPodUsage } from "./controllers/podautoscaler/metrics.js";
import { notifying } from "./controllers/store.js";
import { hostResolvConf, loadSettings, SettingsError, type Settings } from "./settings/node.js";
import { DEFAULT_HOST, DEFAULT_PORT } from "./settings/port.js";
import { createServiceSource, type ServiceSource } from "./services/source.js";
import { createEndpointsFeed } from "./kubeapi/kinds/endpoints-feed.js";
import { serviceNetworkFrom } from "./settings/services.js";
import type { Service } from "./pod/workloads/service.js";
import { servicesRefusalFor, startNodeDataplane } from "./services/node-dataplane.js";
import { memoryServiceSource } from "./services/types.js";
import { openFileLimit } from "./host/fd-limit.js";
import { migrateClaimLayout } from "./host/claim-layout.js";
import { startLogRotation } from "./host/container-log-rotation.js";
import { podClaims } from "./volumemanager/volumes.js";
import { StreamBudget } from "./http/stream-budget.js";

export const DEV_ISSUER = "podsync-dev";
/** Where the node's state lives when PODSYNC_STATE_DIR is unset (outside dev mode). */
export const DEFAULT_STATE_DIR = "/var/lib/podsync/state";

interface Keys {
  keys: { jwks: JSONWebKeySet } | { url: string };
  issuers: string[];
  dev?: { keyFile: string };
}

async function loadKeys(s: Settings): Promise<Keys> {
  const issuers = s.PODSYNC_ISSUERS ?? [];
  if (s.PODSYNC_JWKS_URL) return { keys: { url: s.PODSYNC_JWKS_URL }, issuers };
  if (s.PODSYNC_JWKS) return { keys: { jwks: parseJwks(s.PODSYNC_JWKS, "PODSYNC_JWKS") }, issuers };
  if (s.PODSYNC_JWKS_FILE)
    return {
      keys: { jwks: parseJwks(readFile(s.PODSYNC_JWKS_FILE, "PODSYNC_JWKS_FILE"), "PODSYNC_JWKS_FILE") },
      issuers,
    };
  // Dev mode: a key pair kept in PODSYNC_DEV_DIR, made once.
  const dir = resolve(s.PODSYNC_DEV_DIR);
  const keyFile = join(dir, "dev-key.json");
  const jwksFile = join(dir, "dev-jwks.json");
  if (!existsSync(keyFile) || !existsSync(jwksFile)) {
    const k = await generateSigningKey("EdDSA");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(keyFile, `${JSON.stringify({ ...k.privateJwk, iss: DEV_ISSUER }, null, 2)}\n`, { mode: 0o600 });
    writeFileSync(jwksFile, `${JSON.stringify(k.jwks, null, 2)}\n`);
  }
  return {
    keys: { jwks: parseJwks(readFileSync(jwksFile, "utf8"), jwksFile) },
    issuers: [DEV_ISSUER, ...issuers],
    dev: { keyFile },
  };
}

/** podsync's own version (package.json beside src/ and dist/), for /version. */
function podsyncVersion(): string {
  try {
    return String(
      (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version?: unknown })
        .version ?? "unknown",
    );
  } catch {
    return "unknown";
  }
}

function readFile(path: string, setting: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    throw new SettingsError(`${setting}: cannot read ${path}: ${(e as Error).message}`);
  }
}

function parseJwks(text: string, setting: string): JSONWebKeySet {
  try {
    const j = JSON.parse(text) as JSONWebKeySet;
    if (!Array.isArray(j.keys) || j.keys.length === 0)
      throw new Error('expected {"keys": [...]} with at least one key');
    if (j.keys.some((k) => "d" in k && k.kty !== "oct"))
      throw new Error("a JWKS for verification must hold public keys only");
    return j;
  } catch (e) {
    throw new SettingsError(`${setting}: not a usable JWK set: ${(e as Error).message}`);
  }
}

export interface Running {
  server: ServerType | Server;
  /** http://host:port; the same port answers https (when PODSYNC_TLS is on). */
  url: string;
  /** https://host:port and the serving certificate (PEM) a client should trust; absent with PODSYNC_TLS off. */
  tls?: { url: string; caCert: string; certFile?: string };
  close(): Promise<void>;
}

export async function startNode(
  env: Record<string, string | undefined> = process.env,
  quiet = false,
): Promise<Running> {
  const s = loadSettings(env);
  const keys = await loadKeys(s);
  // Every CRI call is counted by method and gRPC code for /metrics (prom-client is loaded only if served).
  const metrics = s.PODSYNC_METRICS === "off" ? undefined : createPromMetrics();
  const transport = new GrpcTransport({
    endpoint: s.PODSYNC_CRI_ENDPOINT,
    timeoutMs: s.PODSYNC_CRI_TIMEOUT_MS,
    token: s.PODSYNC_CRI_TOKEN,
    tls: s.PODSYNC_CRI_TLS
      ? { ca: s.PODSYNC_CRI_TLS_CA, cert: s.PODSYNC_CRI_TLS_CERT, key: s.PODSYNC_CRI_TLS_KEY }
      : undefined,
  });
  const cri = createCriClient(transport, metrics?.criCall);
  // Used jtis persist on the node, so a token never acts twice even across restarts. A state directory
  // that cannot be used is not fatal: signed requests get 503 state-unavailable until it can.
  const stateDir = s.PODSYNC_STATE_DIR ?? (keys.dev ? join(resolve(s.PODSYNC_DEV_DIR), "state") : DEFAULT_STATE_DIR);
  // One process per state directory, before anything in it is read: a second podsync on the same directory
  // refuses to start (StateDirInUseError, naming it and the holder's pid). The stores take the lock before they
  // load, so one opened later (the directory was unusable at start) still holds it first.
  const dirLock = new StateDirLock(stateDir);
  const lockError = await dirLock.acquire().then(
    () => undefined,
    (e: unknown) => {
      if (e instanceof StateDirInUseError) throw e;
      return e as StateUnavailableError;
    },
  );
  const replay = new FileReplayStore(join(stateDir, "jti"), { lock: dirLock });
  // The desired pods (pods/, generation.json) beside the used jtis: the node agent's store.
  const skipped: string[] = [];
  const files = new FileDesiredState(stateDir, {
    onSkip: (file, why) => skipped.push(`${file}: ${why}`),
    lock: dirLock,
  });
  const stateError =
    lockError ??
    (await replay
      .open()
      .then(() => files.open())
      .then(
        () => undefined,
        (e: StateUnavailableError) => e,
      ));
  // Secrets signed with a pod are stored sealed under the node's key (<stateDir>/secrets.key), never in clear.
  const desired = new SealedDesiredState(files, () => loadSealKey(stateDir));
  const verifierOptions = {
    keys: keys.keys,
    issuers: keys.issuers,
    audience: [s.PODSYNC_NODE_NAME, ...s.PODSYNC_NODE_ALIASES],
    algorithms: s.PODSYNC_ALGORITHMS as Algorithm[],
    maxLifetimeSeconds: s.PODSYNC_MAX_TOKEN_LIFETIME_S,
    clockSkewSeconds: s.PODSYNC_CLOCK_SKEW_S,
  };
  const verifier = createVerifier({ ...verifierOptions, replay });
  const hostIPs = await nodeHostIPs();
  // The node's DiskPressure as the eviction manager last found it (the Node object's condition, and admission's).
  let diskPressure: { pressure: boolean; since: number } | undefined;
  const policy = nodePolicy(s);
  const nodeInfo = {
    ...nodeInfoFrom(s, s.PODSYNC_NODE_NAME, {
      arch: process.arch,
      cpus: cpus().length,
      memoryBytes: totalmem(),
      ephemeralStorageBytes: await rootFsBytes(canonicalRootDir(s.PODSYNC_ROOT_DIR)),
    }),
    conditions: () => (diskPressure?.pressure ? (["DiskPressure"] as const) : []),
  };
  // The downward API's defaults for a missing limit are the node's allocatable, as admission sees it.
  const nodeConfig = {
    ...nodeConfigFrom(s, { dns: hostResolvConf(), memoryBytes: totalmem(), appArmorEnabled: hostAppArmorEnabled() }),
    rootDir: canonicalRootDir(s.PODSYNC_ROOT_DIR),
    nodeName: s.PODSYNC_NODE_NAME,
    cpuCapacity: (nodeInfo.allocatable.milliCPU ?? cpus().length * 1000) / 1000,
  };
  // The Services data plane (PODSYNC_SERVICE_DATAPLANE=auto, the default, as root; or on): the nftables proxier and
  // the cluster DNS, which pods get as their nameserver (the bridge's gateway unless PODSYNC_CLUSTER_DNS says
  // otherwise). Its source is pending until the Service model (src/services/source.ts, made with the pods' feed
  // below) hands it the first snapshot after the pods' first relist.
  const dataplaneSource = memoryServiceSource({}, { pending: true });
  const dataplaneWanted =
    s.PODSYNC_SERVICE_DATAPLANE === "on" || (s.PODSYNC_SERVICE_DATAPLANE === "auto" && process.getuid?.() === 0);
  const dataplane = dataplaneWanted
    ? await startNodeDataplane({
        source: dataplaneSource,
        serviceCIDRs: [s.PODSYNC_SERVICE_CIDR.text],
        cniConfDir: s.PODSYNC_CNI_CONF_DIR,
        runtimeStatusInfo: async () => (await cri.status({ verbose: true })).info,
        clusterDNS: s.PODSYNC_CLUSTER_DNS,
        clusterDomain: s.PODSYNC_CLUSTER_DOMAIN,
        upstreams: s.PODSYNC_DNS_UPSTREAM,
        nodeName: s.PODSYNC_NODE_NAME,
        log: (rec) =>
          quiet || console.error(JSON.stringify({ time: new Date().toISOString(), loop: "services", ...rec })),
      })
    : undefined;
  if (dataplane) nodeConfig.clusterDNS = dataplane.clusterDNS;
  // Services are refused, never half-applied, where the data plane was wanted and cannot run (issue #37); with
  // PODSYNC_SERVICE_DATAPLANE=off the owner chose Services without kernel rules or DNS (docs/services-dataplane.md).
  const servicesRefusal = servicesRefusalFor(
    s.PODSYNC_SERVICE_DATAPLANE,
    dataplane?.dataplane,
    s.PODSYNC_SERVICE_CIDR.text,
  );
  // The runtime's Version, read at start as kubelet reads it: the event stream takes its source from it (and reads
  // it again when it opens anew), and the engine its name for container ids, so no pod's first sync asks for it.
  // (With the stream off, or its read failed, the engine's first sync reads it, counted in that sync's calls.)
  let version: Promise<VersionResponse> | undefined;
  const readVersion = () => {
    const p: Promise<VersionResponse> = cri.version({}).catch((e: unknown) => {
      if (version === p) version = undefined;
      throw e;
    });
    return (version = p);
  };
  // With runtime events on, a sync's decision reads the status the stream vouches for (container/cache.ts).
  const statusCache = s.PODSYNC_RUNTIME_EVENTS === "on" ? new PodStatusCache() : undefined;
  if (statusCache) metrics?.setStatusCache?.(() => statusCache.stats);
  // The node's Services (made below, with the stores): a container's Service env vars read them as it starts.
  let serviceSource: ServiceSource | undefined;
  const engine = createPodRuntime(cri, {
    services: () => serviceSource?.snapshot().services ?? [],
    version: () => version,
    statusCache,
    terminationFiles: nodeTerminationFiles,
    podDirs: nodePodDirs,
    hostIPs,
    pullTimeoutMs: s.PODSYNC_CRI_PULL_TIMEOUT_MS,
    lock: new MemoryPodLock(s.PODSYNC_LOCK_WAIT_MS),
    node: nodeConfig,
    logFiles: nodeLogFiles,
    volumeHost: nodeVolumeHost,
    volumeFiles: nodeVolumeFiles,
    hookNetwork: nodeProbeNetwork,
    localStorageLimits: true,
    // kubelet's Pulling event while the pull runs (the recorder is made below, before any sync).
    onPulling: (pod, container, image) => recorder.pulling(pod, container, image),
  });
  // The Kubernetes API's state: one resourceVersion clock, the pods (fed by the loop's relist), the events
  // (recorded from what every sync and delete did), this node.
  const startedAt = Date.now();
  const clock = new RvClock(startedAt);
  const podsHub = new WatchHub<V1Pod>(clock, { key: (p) => p.metadata.uid });
  const recorder = new EventRecorder(clock, s.PODSYNC_NODE_NAME);
  const nodeHub = new WatchHub<V1Node>(clock, { key: (n) => n.metadata.name });
  let runtimeName = "";
  const feedPods = createPodFeed(podsHub, {
    nodeName: s.PODSYNC_NODE_NAME,
    hostIPs,
    runtimeName: () => runtimeName,
    recorder,
    eviction: (uid) => engine.eviction(uid),
    deletion: (uid) => engine.deleting().get(uid),
  });
  // Requests and the loop share the engine (and so its per-pod lock); their syncs are counted apart.
  // Every sync's read-back and every delete also updates the Kubernetes API's pods (between relists, which
  // runtime events make minutes apart).
  // The loop's relist takes what a request's sync read back too (it needs not read a new sandbox's status again).
  // An eviction's verdict shows at once (the loop does not sync an evicted pod, and with runtime events up the next
  // relist may be minutes away).
  const podsAfter = {
    synced: (pod: Pod, r: SyncResult) => {
      feedPods.synced(pod, r.after, prober.results(pod.metadata.uid));
      loop.learn(r.after);
    },
    deleted: (uid: string) => feedPods.removed(uid),
    deleting: (uid: string) => feedPods.deleting(uid),
    evicted: () => feedPods.again(),
  };
  const runtime = recordingEvents(instrumentRuntime(engine, metrics, "request"), recorder, podsAfter);
  // Probe workers' state persists under the state dir, so a restart keeps their counts; in memory (with a
  // warning) when the directory cannot be used.
  const probeStore = new FileProbeStateStore(join(stateDir, "probes"), {
    onError: (e) =>
      quiet ||
      console.error(
        JSON.stringify({
          time: new Date().toISOString(),
          loop: "probes",
          error: `probe state not written: ${(e as NodeJS.ErrnoException)?.code ?? String(e)}`,
        }),
      ),
  });
  const probeStoreError =
    lockError ??
    (await probeStore.open().then(
      () => undefined,
      (e: StateUnavailableError) => e,
    ));
  const probes: ProbeStateStore = probeStoreError ? new MemoryProbeStateStore() : probeStore;
  const prober = createProber({
    cri,
    network: nodeProbeNetwork,
    store: probes,
    ...(hostIPs[0] ? { hostIP: hostIPs[0] } : {}),
  });
  // The node's workloads (workloads.log beside pods/, Secrets sealed) and the controllers that make their pods;
  // the loop runs them every pass.
  const workloadFiles = new FileWorkloadStore(
    stateDir,
    () => loadSealKey(stateDir),
    (file, why) => skipped.push(`${file}: ${why}`),
  );
  const workloadsError = await workloadFiles.open().then(
    () => undefined,
    (e: StateUnavailableError) => e,
  );
  // Claims moved once to <root>/volumes/pvc/<namespace>/<claim> (host/claim-layout.ts), before any pod syncs;
  // which namespace an old claim belongs to is read from the stores just loaded.
  await migrateClaimLayout(
    nodeConfig.rootDir,
    async () => {
      const [pods, stored] = await Promise.all([files.list(), workloadFiles.list()]);
      return {
        pods: pods.map((e) => ({ namespace: e.pod.metadata.namespace, claims: podClaims(e.pod) })),
        statefulSets: stored.flatMap(({ workload: w }) =>
          w.kind === "StatefulSet"
            ? [
                {
                  namespace: w.metadata.namespace,
                  name: w.metadata.name,
                  templates: (w.spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name),
                },
              ]
            : [],
        ),
        claims: stored.flatMap(({ workload: w }) =>
          w.kind === "PersistentVolumeClaim" ? [{ namespace: w.metadata.namespace, name: w.metadata.name }] : [],
        ),
      };
    },
    (line) => void (quiet || process.stdout.write(`${line}\n`)),
  ).catch((e: unknown) =>
    // Not fatal: the old tree stays in volumes/pvc.v1 and the next start goes on with it.
    process.stderr.write(`podsync: warning: claims not moved to the namespaced layout: ${(e as Error).message}\n`),
  );
  // Every change to them (a request's, a controller's) also feeds the Kubernetes API's workload kinds.
  const workloadFeed = createWorkloadFeed(clock, workloadFiles);
  // A request that changes the workloads kicks the loop: their controllers run at once.
  let kickLoop = () => undefined as void;
  const workloads = notifying(workloadFeed.store, () => kickLoop());
  // The Services (stored with the workloads) and the node's pods make the EndpointSlices; the data plane, the env
  // vars and the Kubernetes API read them from this source (src/services/source.ts).
  serviceSource = createServiceSource({
    services: {
      list: async () =>
        (await workloadFeed.store.list()).map((w) => w.workload).filter((w): w is Service => w.kind === "Service"),
      subscribe: (cb) => workloadFeed.hubs.Service.watch({ since: undefined, filter: () => true, send: cb }),
    },
    pods: {
      list: () => podsHub.list(),
      subscribe: (cb) => podsHub.watch({ since: undefined, filter: () => true, send: cb }),
    },
    onError: (e) =>
      quiet ||
      console.error(
        JSON.stringify({ time: new Date().toISOString(), loop: "services", error: String((e as Error)?.message ?? e) }),
      ),
  });
  const services = serviceSource;
  void services.refresh();
  // The data plane is fed once the pods were relisted (before, every Service would look endpoint-less).
  let podsRelisted = false;
  const feedDataplane = () => podsRelisted && dataplaneSource.set(services.snapshot());
  if (dataplane) services.subscribe(feedDataplane);
  const endpointsFeed = createEndpointsFeed(clock, services);
  // The loop and the controllers act through one runtime view: counted as the loop's, and recording events.
  const loopRuntime = recordingEvents(instrumentRuntime(engine, metrics, "loop"), recorder, podsAfter);
  const controllers = createControllers({
    workloads: workloadFeed.store,
    desired,
    runtime: loopRuntime,
    nodeName: s.PODSYNC_NODE_NAME,
    node: nodeInfo,
    podUsage: criPodUsage(cri),
    autoscaler: {
      syncPeriodMs: s.PODSYNC_HPA_SYNC_PERIOD_MS,
      downscaleStabilisationWindowMs: s.PODSYNC_HPA_DOWNSCALE_STABILIZATION_MS,
    },
    log: (rec) =>
      quiet || console.error(JSON.stringify({ time: new Date().toISOString(), loop: "controllers", ...rec })),
    onRefused: (pod, reason, message) => recorder.record(pod.metadata, { type: "Warning", reason, message }),
    // The node owner's bounds and policy hold for the pods the controllers make as for a pod sent directly, as
    // they are now (a workload stored under looser settings is refused, with an event on it).
    limits: { maxPods: nodeInfo.allocatable.pods ?? 110 },
    admitTemplate: templateRefusal(policy, engine),
    onWorkloadRefused: (w, f) =>
      recorder.record(
        {
          kind: w.kind,
          apiVersion: w.apiVersion,
          namespace: w.metadata.namespace,
          name: w.metadata.name,
          uid: w.metadata.uid ?? "",
        },
        { type: "Warning", reason: f.reason, message: f.message },
      ),
  });
  // The eviction manager's DiskPressure, for the Node object (its condition and taint); the node is read again
  // when it changes.
  let nodeChanged = () => undefined as void;
  // The node agent's loop keeps every pod in the desired state running, with nobody calling.
  const loop = startReconcileLoop({
    controllers,
    runtime: loopRuntime,
    cri,
    desired,
    prober,
    metrics,
    relistIntervalMs: s.PODSYNC_RELIST_INTERVAL_MS ?? RELIST_INTERVAL_DEFAULT_MS.node,
    // Exits restart containers at once; the relist stays as the safety net (and takes over while the stream is down).
    // The status cache hears each event before the loop acts on it.
    events:
      s.PODSYNC_RUNTIME_EVENTS === "on"
        ? (on) =>
            watchContainerEvents({
              transport,
              version: readVersion,
              onEvent: (e) => {
                statusCache?.event(e);
                on.event(e);
              },
              onState: (st) => {
                statusCache?.streamUp(st.up);
                on.state(st);
              },
            })
        : undefined,
    eventedRelistIntervalMs: s.PODSYNC_EVENTED_RELIST_INTERVAL_MS,
    resyncIntervalMs: s.PODSYNC_RESYNC_INTERVAL_MS,
    log: (rec) => quiet || console.error(JSON.stringify({ time: new Date().toISOString(), loop: "reconcile", ...rec })),
    eviction: {
      cri,
      disk: nodeDiskUsage,
      node: nodeConfig,
      ...(s.PODSYNC_EVICTION_INTERVAL_MS !== undefined ? { intervalMs: s.PODSYNC_EVICTION_INTERVAL_MS } : {}),
      ...(s.PODSYNC_VOLUME_STATS_AGG_PERIOD_MS !== undefined
        ? { volumeStatsAggPeriodMs: s.PODSYNC_VOLUME_STATS_AGG_PERIOD_MS }
        : {}),
      ...(s.PODSYNC_EVICTION_HARD_NODEFS_AVAILABLE !== undefined
        ? {
            diskPressure: {
              threshold: evictionThreshold(s.PODSYNC_EVICTION_HARD_NODEFS_AVAILABLE),
              fs: () => nodeFs(nodeConfig.rootDir),
            },
          }
        : {}),
      onDiskPressure: (pressure) => {
        if (pressure === diskPressure?.pressure) return;
        diskPressure = { pressure, since: Date.now() };
        nodeChanged();
      },
      // The kill runs beside the loop; a failed one is said once, as the loop says its errors.
      onKilled: (uid, r) =>
        r.ok ||
        quiet ||
        console.error(
          JSON.stringify({
            time: new Date().toISOString(),
            loop: "eviction",
            uid,
            error: `the evicted pod's kill failed: ${r.error ?? "a step failed"}`,
          }),
        ),
    },
    onRelist: (entries, view) => {
      feedPods(entries, view, (uid) => prober.results(uid));
      if (!podsRelisted && dataplane)
        void services
          .refresh()
          .catch(() => undefined)
          .then(() => ((podsRelisted = true), feedDataplane()));
    },
  });
  metrics?.setSource(loop);
  // kubelet's container log manager: containerLogMaxSize / containerLogMaxFiles (host/container-log-rotation.ts).
  const stopLogRotation = startLogRotation({
    cri,
    maxSize: s.PODSYNC_CONTAINER_LOG_MAX_SIZE,
    maxFiles: s.PODSYNC_CONTAINER_LOG_MAX_FILES,
    intervalMs: s.PODSYNC_CONTAINER_LOG_MONITOR_INTERVAL_MS,
    onError: (e, id) =>
      process.stderr.write(`podsync: rotating the log of container ${id}: ${(e as Error)?.message ?? e}\n`),
  });
  // The request log (podsync's routes, the Kubernetes API's, exec): one write of the line as built (console.log
  // would format the string again on its way out).
  const requestLog = quiet
    ? () => undefined
    : (rec: RequestLog) => void process.stdout.write(`${JSON.stringify(rec)}\n`);
  kickLoop = () => loop.kick();
  // Open watches, exec sessions and log streams, on both fronts: one budget per node.
  const streams = new StreamBudget(
    StreamBudget.limitsFor(s.PODSYNC_MAX_STREAMS, s.PODSYNC_MAX_STREAMS_PER_TOKEN, openFileLimit()),
  );
  const appOptions: AppOptions = {
    streams,
    runtime,
    prober,
    desired,
    workloads,
    serviceAccountTokens: s.PODSYNC_SERVICE_ACCOUNT_TOKENS,
    maxWorkloads: s.PODSYNC_MAX_WORKLOADS,
    unknownKinds: s.PODSYNC_UNKNOWN_KINDS,
    verifier,
    nodeName: s.PODSYNC_NODE_NAME,
    policy,
    nodeInfo,
    maxBodyBytes: s.PODSYNC_MAX_BODY_BYTES,
    allowExec: s.PODSYNC_ALLOW_EXEC,
    execMaxOutputBytes: s.PODSYNC_EXEC_MAX_OUTPUT_BYTES,
    logFollowMaxMs: s.PODSYNC_LOG_FOLLOW_MAX_S * 1000,
    ...(metrics
      ? {
          metrics: {
            mode: s.PODSYNC_METRICS,
            render: () => metrics.render(),
            contentType: metrics.contentType,
            // @hono/node-server hands the Node request in the context's env.
            peerAddress: (c: { env: unknown }) =>
              (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming?.socket
                ?.remoteAddress,
          },
        }
      : {}),
    log: requestLog,
    // kubelet's rejectPod: a Warning event on the pod as sent, with admission's reason and message.
    onAdmissionRefused: (refused) => {
      for (const r of refused) recorder.record(r.pod, { type: "Warning", reason: r.reason, message: r.message });
    },
    // A request's sync or PUT: no loop pass syncs its pods until its own syncs are done.
    holdLoop: (uids) => loop.hold(uids),
    ...(servicesRefusal ? { servicesRefusal } : { services: serviceNetworkFrom(s) }),
  };
  const app = createApp(appOptions);
  // Pull mode (PODSYNC_FLEET_URL): the fleet's desired sets come in through the same PUT (docs/fleet.md).
  const fleet = await startFleetLink({
    env,
    nodeName: s.PODSYNC_NODE_NAME,
    stateDir,
    version: podsyncVersion(),
    capacity: { cpu: String(cpus().length), memory: String(totalmem()), arch: process.arch },
    app: appOptions,
    verifier: verifierOptions,
    desired,
    pods: () => podsHub.list(),
    log: (rec) => quiet || console.error(JSON.stringify({ time: new Date().toISOString(), ...rec })),
  }).catch((e: unknown) => {
    throw e instanceof FleetSettingsError ? new SettingsError(e.message) : e;
  });
  const machine = machineFacts();
  const refreshNode = async () => {
    const r = await runtime.ready().catch(() => undefined);
    if (r && r.runtime.name !== runtimeName) {
      runtimeName = r.runtime.name;
      feedPods.again();
    }
    nodeHub.replaceAll([
      nodeObject(
        {
          info: nodeInfo,
          cpus: cpus().length,
          memoryBytes: totalmem(),
          hostIPs,
          ...machine,
          startedAt,
          port: s.PODSYNC_PORT,
        },
        r,
        Date.now(),
        { disk: diskPressure },
      ),
    ]);
  };
  nodeChanged = () => void refreshNode().catch(() => undefined);
  // The Kubernetes API's routes and kubectl exec's WebSocket server are loaded at their first request: a node that
  // only takes signed syncs never holds their code (idle RSS 97.6 -> 91.8 MiB, bench/results/log-2026-12-issue21.md).
  let kube: Promise<{ fetch: (req: Request, env: object) => Response | Promise<Response> }> | undefined;
  const kubeApi = async () =>
    (await import("./kubeapi/routes.js")).createKubeApi({
      verifier,
      pods: podsHub,
      events: recorder,
      node: { hub: nodeHub, refresh: refreshNode },
      // The runtime's name (container ids are <name>://<id>) is learnt at the first Kubernetes API request: a node
      // nobody asks costs no extra runtime call.
      prepare: refreshNode,
      runtime,
      podsyncVersion: podsyncVersion(),
      arch: nodeInfo.labels["kubernetes.io/arch"] ?? process.arch,
      followMaxMs: s.PODSYNC_LOG_FOLLOW_MAX_S * 1000,
      allowExec: s.PODSYNC_ALLOW_EXEC,
      log: requestLog,
      workloads: workloadFeed,
      endpoints: endpointsFeed,
      metrics: await resourceMetrics(),
      streams,
    });
  // kubectl top's Metrics API: CRI stats sampled on a timer while someone reads them (never on the sync path);
  // loaded with the Kubernetes API.
  const resourceMetrics = async () => {
    const [{ createResourceSampler }, { readNodeUsage }] = await Promise.all([
      import("./stats/resource-metrics.js"),
      import("./host/node-usage.js"),
    ]);
    return createResourceSampler({
      cri,
      node: readNodeUsage,
      onFallback: (why) =>
        quiet ||
        console.error(
          JSON.stringify({
            time: new Date().toISOString(),
            loop: "metrics",
            warning: `ListPodSandboxStats refused, ListContainerStats from now on: ${why}`,
          }),
        ),
    });
  };
  // kubectl exec: a WebSocket upgrade, joined to the runtime's streaming server. The socket buffers what the client
  // sends while the handler loads (an upgraded socket has no data listener until ws binds one).
  let upgrade: Promise<(req: IncomingMessage, socket: Duplex, head: Buffer) => void> | undefined;
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (drain.stopping) return void socket.destroy();
    upgrade ??= import("./kubeapi/exec-stream.js").then((m) =>
      m.execUpgrade({
        verifier,
        pods: podsHub,
        runtime,
        allowExec: s.PODSYNC_ALLOW_EXEC,
        log: requestLog,
        streams,
        bufferBytes: s.PODSYNC_STREAM_BUFFER_BYTES,
      }),
    );
    // Until ws has the socket, an error on it (the client gone) ends it rather than reach the process unhandled.
    const ended = () => socket.destroy();
    socket.on("error", ended);
    upgrade.then(
      (handle) => (socket.off("error", ended), handle(req, socket, head)),
      () => socket.destroy(),
    );
  };
  // The Kubernetes paths (/version, /api, /apis) go to the Kubernetes API, everything else to podsync's own.
  const kubeFetch = async (req: Request, env: object) => (await (kube ??= kubeApi())).fetch(req, env);
  const route = (req: Request, env: object) =>
    isKubePath(new URL(req.url).pathname) ? kubeFetch(req, env) : app.fetch(req, env);
  // Requests being answered (until their response starts), so a stop can wait for them; once the node is stopping,
  // what still arrives on an open connection is answered 503 shutting-down (a Status on Kubernetes paths).
  const drain = { stopping: false, inFlight: 0, idle: undefined as (() => void) | undefined };
  const fetch = async (req: Request, env: object): Promise<Response> => {
    if (drain.stopping) return shuttingDown(new URL(req.url).pathname);
    drain.inFlight++;
    try {
      return await route(req, env);
    } finally {
      if (--drain.inFlight === 0) drain.idle?.();
    }
  };
  let tls: { cert: string; key: string; certFile?: string | undefined } | undefined;
  let tlsWarning: string | undefined;
  if (s.PODSYNC_TLS) {
    if (s.PODSYNC_TLS_CERT_FILE && s.PODSYNC_TLS_KEY_FILE)
      tls = {
        cert: readFile(s.PODSYNC_TLS_CERT_FILE, "PODSYNC_TLS_CERT_FILE"),
        key: readFile(s.PODSYNC_TLS_KEY_FILE, "PODSYNC_TLS_KEY_FILE"),
        certFile: s.PODSYNC_TLS_CERT_FILE,
      };
    else {
      const ips = [
        ...new Set([
          "127.0.0.1",
          "::1",
          ...hostIPs,
          ...(isIP(s.PODSYNC_HOST) && !["0.0.0.0", "::"].includes(s.PODSYNC_HOST) ? [s.PODSYNC_HOST] : []),
        ]),
      ];
      const names = [
        ...new Set([
          "localhost",
          s.PODSYNC_NODE_NAME,
          machine.hostname,
          ...(isIP(s.PODSYNC_HOST) ? [] : [s.PODSYNC_HOST]),
        ]),
      ];
      const made = loadOrMakeServingCert(join(stateDir, "tls"), `${s.PODSYNC_NODE_NAME}@podsync`, names, ips);
      tls = made;
      if (!made.persisted)
        tlsWarning = `${join(stateDir, "tls")} cannot be written: the self-signed serving certificate is kept in memory and changes at every start`;
    }
  }
  // A port in use or a host that is not this machine's: a settings problem, said in one line (no stack).
  const listenError = (e: NodeJS.ErrnoException) => {
    const where = `${s.PODSYNC_HOST}:${s.PODSYNC_PORT}`;
    if (e.code === "EADDRINUSE")
      return new SettingsError(
        `cannot listen on ${where}: the port is in use (another podsync? stop it, or set PODSYNC_PORT to a free port)`,
      );
    if (e.code === "EADDRNOTAVAIL" || e.code === "ENOTFOUND")
      return new SettingsError(`cannot listen on ${where}: PODSYNC_HOST is not an address of this machine`);
    if (e.code === "EACCES")
      return new SettingsError(
        `cannot listen on ${where}: not allowed (ports below 1024 need privileges; set PODSYNC_PORT)`,
      );
    return e;
  };
  let dual: DualListener | undefined;
  const server = await new Promise<ServerType | Server>((res, rej) => {
    if (tls) {
      dual = dualListener(getRequestListener(fetch), tls);
      dual.onUpgrade(onUpgrade);
      const srv = dual.server;
      srv.once("error", (e: NodeJS.ErrnoException) => rej(listenError(e)));
      srv.listen(s.PODSYNC_PORT, s.PODSYNC_HOST, () => res(srv));
      return;
    }
    const srv = serve({ fetch, hostname: s.PODSYNC_HOST, port: s.PODSYNC_PORT }, () => res(srv));
    srv.on("upgrade", onUpgrade);
    srv.once("error", (e: NodeJS.ErrnoException) => rej(listenError(e)));
  }).catch(async (e: unknown) => {
    // Not serving (the port is taken): nothing of this process may go on holding the state directory.
    stopLogRotation();
    await fleet?.close();
    await loop.stop();
    await dataplane?.dataplane.stop();
    await probeStore.close().catch(() => undefined);
    await workloadFiles.close().catch(() => undefined);
    await replay.close();
    await dirLock.release();
    cri.close();
    throw e;
  });
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : s.PODSYNC_PORT;
  const host = s.PODSYNC_HOST.includes(":") ? `[${s.PODSYNC_HOST}]` : s.PODSYNC_HOST;
  const url = `http://${host}:${port}`;
  const tlsInfo = tls && {
    url: `https://${host}:${port}`,
    caCert: tls.cert,
    ...(tls.certFile ? { certFile: tls.certFile } : {}),
  };
  if (!quiet) {
    const lines = [
      `podsync listening on ${url}  (node "${s.PODSYNC_NODE_NAME}", CRI ${s.PODSYNC_CRI_ENDPOINT})`,
      `  policy:  ${s.PODSYNC_POLICY} (PODSYNC_POLICY: ${s.PODSYNC_POLICY === "privileged" ? "every pod field is allowed" : `pods beyond the ${s.PODSYNC_POLICY} Pod Security Standard are refused; privileged allows hostNetwork, hostPath and the like`})` +
        `;  exec: ${s.PODSYNC_ALLOW_EXEC ? "on" : "off (PODSYNC_ALLOW_EXEC=true turns it on)"}`,
      `  health:  curl ${url}/healthz      runtime: curl ${url}/readyz`,
    ];
    if (tlsInfo)
      lines.push(
        `  kubectl: ${tlsInfo.url} (the same port over TLS; certificate ${tlsInfo.certFile ?? "given"}, SHA-256 ${new X509Certificate(tlsInfo.caCert).fingerprint256}; see docs/kubectl.md)`,
      );
    const sock = s.PODSYNC_CRI_ENDPOINT.startsWith("unix://")
      ? s.PODSYNC_CRI_ENDPOINT.slice(7)
      : s.PODSYNC_CRI_ENDPOINT.startsWith("/")
        ? s.PODSYNC_CRI_ENDPOINT
        : "";
    if (sock && !existsSync(sock))
      lines.push(
        `  warning: ${sock} does not exist yet; /readyz will say 503 until the runtime runs (or set PODSYNC_CRI_ENDPOINT)`,
      );
    lines.push(
      `  state:   ${stateDir} (desired pods in pods/, used token ids in jti/, probe state in probes/${keys.dev && !s.PODSYNC_STATE_DIR ? "; dev mode keeps them beside the dev key, set PODSYNC_STATE_DIR" : ""})`,
    );
    if (tlsWarning) lines.push(`  warning: ${tlsWarning}`);
    if (dataplane) lines.push(...dataplane.lines);
    else if (servicesRefusal) lines.push(`  warning: Services are refused: ${servicesRefusal}`);
    else
      lines.push(
        "  services: kept without a data plane (PODSYNC_SERVICE_DATAPLANE=off): ClusterIPs and NodePorts are not routed and cluster DNS does not answer; unset it (auto) to run them (root)",
      );
    for (const k of skipped) lines.push(`  warning: desired pod left out: ${k}`);
    if (probeStoreError)
      lines.push(
        `  warning: ${join(stateDir, "probes")} cannot be used (${probeStoreError.code ?? String(probeStoreError.cause)}); probe state is kept in memory only`,
      );
    if (workloadsError)
      lines.push(
        `  warning: ${join(stateDir, "workloads.log")} cannot be used (${workloadsError.code ?? String(workloadsError.cause)}); workloads are refused until it can`,
      );
    if (stateError)
      lines.push(
        `  warning: ${stateDir} cannot be used (${stateError.code ?? String(stateError.cause)}); signed requests get 503 until it can`,
      );
    if (keys.dev)
      lines.push(
        `  dev key: ${keys.dev.keyFile} (issuer "${DEV_ISSUER}"; configure PODSYNC_JWKS_FILE + PODSYNC_ISSUERS for real keys)`,
        // The CLI finds the dev key in ./.podsync when run where the node was started, and the node at its default URL.
        `  try it:  npx podsync sync examples/pod.yaml${url === `http://${DEFAULT_HOST}:${DEFAULT_PORT}` ? "" : ` --url ${url}`}${resolve(s.PODSYNC_DEV_DIR) === resolve(".podsync") ? "" : ` --key ${keys.dev.keyFile}`}`,
      );
    console.error(lines.join("\n"));
  }
  let closing: Promise<void> | undefined;
  return {
    server,
    url,
    ...(tlsInfo ? { tls: tlsInfo } : {}),
    close: () =>
      (closing ??= shutdown({
        drain,
        stopListening: () => {
          if (dual) dual.stopListening();
          else {
            server.close();
            (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
          }
        },
        closeConnections: () =>
          dual
            ? dual.close()
            : new Promise<void>((res) => {
                server.close(() => res());
                // As the dual listener does: a watch or a log follow never ends by itself, and must not hold the stop.
                (server as { closeAllConnections?: () => void }).closeAllConnections?.();
              }),
        markStopping: (deadline) => dirLock.markStopping(deadline),
        stopWork: async () => {
          services.stop();
          stopLogRotation();
          await fleet?.close();
          await loop.stop();
          await controllers.settle();
          await dataplane?.dataplane.stop();
          await probeStore.close().catch(() => undefined);
          await workloadFiles.close().catch(() => undefined);
        },
        release: async () => {
          cri.close();
          await replay.close();
          await dirLock.release();
        },
      })),
  };
}

// Run as the program (`node dist/node.js`, `npm start`), not imported (tests, bench). Node resolves the main
// module's symlinks, so compare real paths; fileURLToPath also decodes %20 and the like.
function isMain(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}
/** The node as a program: started from the environment, stopped by SIGINT or SIGTERM; a settings error is one line
 * and exit code 1. `npm start` (this file as the main module) and `podsync serve` (an installed package) run it. */
export function runNode(): void {
  const started = startNode();
  // The signals are taken before start-up ends (the banner is printed just before): a stop asked for meanwhile
  // waits for the start, then closes cleanly and gives the state directory's lock up.
  const stop = () => {
    // Past the grace (and the lock's slack), the process goes whatever is left.
    setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS + 5_000).unref();
    void started
      .then((r) => r.close())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  started.catch((e: unknown) => {
    console.error(e instanceof SettingsError || e instanceof StateDirInUseError ? `podsync: ${e.message}` : e);
    process.exit(1);
  });
}

/** How long a stop (SIGTERM, SIGINT, close()) waits for the requests and the syncs in flight before it closes
 * the runtime connection anyway (docs/reliability.md). */
export const SHUTDOWN_GRACE_MS = 30_000;

interface ShutdownSteps {
  drain: { stopping: boolean; inFlight: number; idle: (() => void) | undefined };
  stopListening(): void;
  closeConnections(): Promise<void>;
  markStopping(deadline: number): Promise<void>;
  stopWork(): Promise<void>;
  release(): Promise<void>;
}

/** kubelet's order on a stop: admit nothing new (the listener closes, so the port is free for the next process at
 * once, and what still arrives on an open connection is answered 503 shutting-down), let what is in flight finish
 * (requests, the loop's pass, the controllers' deletes) within SHUTDOWN_GRACE_MS, then end the connections left
 * (watches, follows), and only then close the runtime connection and let the state directory go. The lock says the
 * process is stopping, so a supervisor's restart meanwhile waits for it instead of refusing. */
async function shutdown(o: ShutdownSteps): Promise<void> {
  const deadline = Date.now() + SHUTDOWN_GRACE_MS;
  o.drain.stopping = true;
  o.stopListening();
  await o.markStopping(deadline);
  const requests = o.drain.inFlight === 0 ? Promise.resolve() : new Promise<void>((res) => (o.drain.idle = res));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const grace = new Promise<void>((res) => (timer = setTimeout(res, Math.max(0, deadline - Date.now()))));
  await Promise.race([Promise.all([requests, o.stopWork()]), grace]);
  clearTimeout(timer);
  await o.closeConnections();
  await o.release();
}

/** The answer to a request that arrives while the node stops: 503 shutting-down, a Status on Kubernetes paths. */
function shuttingDown(path: string): Response {
  const e = new ProblemError(
    "shutting-down",
    "podsync is shutting down: it takes no new request while it finishes those in flight; retry once it is back",
  );
  if (isKubePath(path)) {
    const r = toKubeStatus(e).toResponse();
    r.headers.set("connection", "close");
    r.headers.set("retry-after", "1");
    return r;
  }
  return e.toResponse(path, { connection: "close", "retry-after": "1" });
}

/** The size of the filesystem holding the root dir (kubelet's node ephemeral-storage capacity); unknown when it
 * cannot be read (then admission does not check ephemeral-storage). */
async function rootFsBytes(dir: string): Promise<number | undefined> {
  for (let d = dir; ; d = dirname(d)) {
    const st = await statfs(d).catch(() => undefined);
    if (st) return st.blocks * st.bsize;
    if (d === "/" || d === ".") return undefined;
  }
}

/** PODSYNC_EVICTION_HARD_NODEFS_AVAILABLE: a percentage of the filesystem, or a size. */
function evictionThreshold(v: string): { percent: number } | { bytes: number } {
  return v.endsWith("%") ? { percent: Number(v.slice(0, -1)) } : { bytes: bytes(v) };
}

/** nodefs: the filesystem of the root dir, its size and what is free to unprivileged users (statfs bavail). */
async function nodeFs(dir: string): Promise<{ capacity: number; available: number }> {
  const st = await statfs(dir);
  return { capacity: st.blocks * st.bsize, available: st.bavail * st.bsize };
}

if (isMain()) runNode();
