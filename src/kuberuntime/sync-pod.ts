// Package kuberuntime/ — the kubelet port: pod status from CRI, computePodActions, SyncPod, kill, gc, container
// config, images. Imports container/, volumemanager/, lifecycle/, logs/; never status/ (src/kubelet/ composes it).
//
// SyncPod: carry out computePodActions over CRI, the way kubelet's kubeGenericRuntimeManager.SyncPod does,
// and report every step. Steps, in kubelet's order:
//   1. compute actions; 2. kill the pod, or the listed containers; 3-4. create the sandbox (with Attempt);
//   5. start the next init container and stop on failure; 6. start ContainersToStart, going on past failures.
// Then (podsync only) 7. remove dead instances the way kubelet's container GC would.
//
// Deliberate differences from kubelet, each small:
// - App containers in step 6 are started concurrently (kubelet loops), unless one has a postStart hook; each still
//   gets its own step, in spec order.
// - After RunPodSandbox kubelet always reads PodSandboxStatus for the pod IP (downward API, /etc/hosts);
//   podsync reads it only when something needs it: the hosts file it writes on the node (so on Node, always),
//   a container's status.podIP(s) env, or a postStart httpGet hook aimed at the pod.
// - Volumes: kubelet's volume manager mounts them before SyncPod and refreshes configMap/secret contents on
//   its own period; podsync writes the file volumes (configMap, secret, downwardAPI, projected) at each
//   sync, before the sandbox, and reports a MountVolumes step only when a file changed or it failed.
// - Crash-loop back-off is derived from the runtime (restart count / back-off streak annotation and the
//   newest exited instance's finish time), not from an in-memory flowcontrol.Backoff; a changed spec starts afresh.
// - kubelet leaves dead containers and sandboxes to its garbage collector; a stateless function has no GC
//   loop, so step 7 does what GC would with kubelet's defaults (keep one dead instance per container name,
//   unknown-state ones stopped first; keep the newest sandbox, remove older non-ready sandboxes that hold no
//   containers). That also covers pruneInitContainersBeforeStart, which kubelet runs before starting containers.
import type { Container, Pod } from "../pod/schema.js";
import type { CriClient } from "../cri/client.js";
import { errorMessage } from "../cri/errors.js";
import { computePodActions } from "./compute-actions.js";
import { generateContainerConfig, generatePodSandboxConfig, podHostnameAndDomain } from "./config/config.js";
import { defaultNodeConfig, type NodeConfig } from "../container/node-config.js";
import { needsImageUser, verifyRunAsNonRoot } from "./config/security.js";
import { findContainerStatusByName, type MadeObjects } from "./pod-status.js";
import { CONTAINER_BACKOFF_STREAK_ANNOTATION } from "../container/labels.js";
import { crashLoopBackOff, formatGoDuration, MemoryPullBackOff, type PullBackOffStore } from "../container/backoff.js";
import { ensureImage, inspect, redact, secretStrings, type ImageContext } from "./images.js";
import { formatPod, gracePeriodSeconds, killContainer, killPod, type KillHooks } from "./kill.js";
import { runHandler, type HookNetwork } from "../lifecycle/handlers.js";
import { containerEnv, expandSubPathExpr } from "../container/expansion.js";
import {
  ETC_HOSTS_PATH,
  etcHostsFile,
  managedHostsFileContent,
  mountsEtcHosts,
  nodeHostsFileContent,
} from "./config/etc-hosts.js";
import { isRestartableInitContainer } from "../pod/schema.js";
import { collectGarbage } from "./gc.js";
import { StepError, Steps } from "../container/steps.js";
import type { PodActions, PodStatus, PodSyncResult } from "../container/types.js";
import { MountSchema, type PodSandboxConfig, type PodSandboxStatus } from "../gen/runtime/v1/api_pb.js";
import { create } from "@bufbuild/protobuf";
import { podContainerDir, type TerminationMessageFiles } from "./termination-message.js";
import type { ContainerToKill } from "../container/types.js";
import { NO_OBJECTS, secretValues, type PodObjects } from "../pod/objects.js";
import { resolvePullSecrets } from "../pod/references.js";
import {
  FILE_VOLUME_PLUGINS,
  hasFileVolumes,
  volumePayloads,
  type VolumeFiles,
} from "../volumemanager/object-volumes.js";
import { envResolver, needsPodIPs, usesEnvSources } from "../container/env-sources.js";
import type { DownwardInfo } from "../container/downward.js";
import { sortPodIPs } from "./pod-status.js";
import { podVolumesDir, type PodDirs } from "../volumemanager/pod-dirs.js";
import { subPathBinds, subPathStepMessage } from "../volumemanager/subpath.js";
import { needsSetUp, setUpVolumes, type VolumeHost } from "../volumemanager/volumes.js";
import { VolumeBackOff } from "../volumemanager/volume-backoff.js";
import { serviceEnvVarMap, type ServiceLister } from "../container/service-env.js";

/** setTerminationGracePeriod: a liveness or startup kill uses the probe's terminationGracePeriodSeconds when set. */
function killGraceSeconds(pod: Pod, info: ContainerToKill): number {
  const probe =
    info.reason === "LivenessProbe"
      ? info.container.livenessProbe
      : info.reason === "StartupProbe"
        ? info.container.startupProbe
        : undefined;
  const g = probe?.terminationGracePeriodSeconds;
  return g !== undefined ? gracePeriodSeconds({ spec: { terminationGracePeriodSeconds: g } }) : gracePeriodSeconds(pod);
}

export interface SyncOptions {
  node?: NodeConfig;
  /** The sync's context: aborted when the pod is asked gone (kubelet's pod worker cancels a running sync of a
   * terminating pod). A postStart hook ends at once; the CRI client's fence refuses the writes after it. */
  signal?: AbortSignal | undefined;
  now?: () => number;
  /** Deadline for PullImage (ms). */
  pullTimeoutMs?: number;
  /** Image pull back-off is the one piece of kubelet state with no record in the runtime (a failed pull
   * leaves no container); it lives here, in memory by default. Losing it costs one early retry. */
  pullBackOff?: PullBackOffStore;
  /** Node filesystem for termination-message files; without it none is mounted (Workers). */
  terminationFiles?: TerminationMessageFiles;
  /** The ConfigMaps and Secrets signed with the pod (its env and volumes refer to them). */
  objects?: PodObjects;
  /** Node filesystem for configMap/secret/downwardAPI/projected volumes; without it they cannot be set up. */
  volumeFiles?: VolumeFiles;
  /** The node's IPs (downward API status.hostIP(s), and a hostNetwork pod's status.podIP(s)). */
  hostIPs?: readonly string[];
  /** Node filesystem for subPath binds; without it a subPath cannot be mounted (Workers refuse it earlier). */
  podDirs?: PodDirs;
  /** Node filesystem for volumes (type checks, tmpfs, claim directories); without it only the volumes the
   * runtime can make alone are accepted (see volumeHostErrors). */
  volumeHost?: VolumeHost | undefined;
  /** Volume set-up back-off (kubelet's nestedpendingoperations), in memory like the pull back-off. */
  volumeBackOff?: VolumeBackOff;
  /** Connections from the node to its pods, for httpGet lifecycle hooks (the probes' client on Node); without
   * it such a hook fails, naming why. */
  hookNetwork?: HookNetwork | undefined;
  /** Told as a pull starts (kubelet's Pulling event is recorded before the pull, not after it). */
  onPulling?: ((pod: Pod, container: string, image: string) => void) | undefined;
  /** The node's Services as a container starts (its Service env vars; container/service-env.ts). */
  services?: ServiceLister | undefined;
}

const defaultPullBackOff = new MemoryPullBackOff();
const defaultVolumeBackOff = new VolumeBackOff();

interface StartContext extends ImageContext {
  status: PodStatus;
  sandboxId: string;
  node: NodeConfig;
  terminationFiles: TerminationMessageFiles | undefined;
  objects: PodObjects;
  /** Downward API values; the pod IPs are read once, when the first container needs them. */
  downward: () => Promise<DownwardInfo>;
  podDirs: PodDirs | undefined;
  hooks: KillHooks;
  /** The containers this sync created (their ids), whatever their start did. */
  created: string[];
  /** The node's Services, for the containers' Service env vars (absent: none). */
  services?: ServiceLister | undefined;
  signal?: AbortSignal | undefined;
}

/** podsync's bound on a postStart hook (kubelet gives it none): the sync that starts the container waits for it. */
const POST_START_DEADLINE_MS = 120_000;

/** Step 4 of startContainer: the postStart hook. On failure the container is killed (its preStop hook runs, as
 * in kubelet's killContainer) and the start fails with PostStartHookError; it restarts per the pod's policy. */
async function runPostStart(ctx: StartContext, container: Container, id: string): Promise<void> {
  const hook = container.lifecycle?.postStart;
  if (!hook) return;
  const podIPs = (await ctx.downward()).podIPs;
  const msg = await runHandler(
    { cri: ctx.cri, network: ctx.hooks.network },
    { pod: formatPod(ctx.pod), container, containerId: id, podIP: podIPs[0] ?? "" },
    hook,
    { deadlineMs: POST_START_DEADLINE_MS, ...(ctx.signal ? { signal: ctx.signal } : {}) },
  );
  if (msg === undefined) return;
  await killContainer(ctx.cri, ctx.pod, { id, name: container.name }, gracePeriodSeconds(ctx.pod), {
    hooks: ctx.hooks,
    podIPs,
  }).catch(() => undefined);
  throw new StepError("PostStartHookError", msg);
}

/** startContainer: back-off check, image, CreateContainer, StartContainer. Returns a message for the step. */
async function startContainer(ctx: StartContext, container: Container): Promise<string> {
  const bo = crashLoopBackOff(container, ctx.status, ctx.now);
  if (bo.inBackOff)
    throw new StepError(
      "CrashLoopBackOff",
      `back-off ${formatGoDuration(bo.delayMs)} restarting failed container=${container.name} pod=${formatPod(ctx.pod)}`,
    );
  const image = await ensureImage(ctx, container);
  if (needsImageUser(ctx.pod, container) && !image.user) image.user = (await inspect(ctx, image.ref))?.user;
  const nonRoot = verifyRunAsNonRoot(ctx.pod, container, image.user);
  if (nonRoot) throw new StepError("CreateContainerConfigError", nonRoot);
  const prev = findContainerStatusByName(ctx.status, container.name);
  const restartCount = prev ? prev.restartCount + 1 : 0;
  let config;
  try {
    const env = usesEnvSources(container)
      ? envResolver(ctx.pod, container, ctx.objects, await ctx.downward())
      : undefined;
    // getServiceEnvVarMap: the Services of the pod's namespace that exist now, as the container starts.
    const serviceEnv = ctx.services
      ? serviceEnvVarMap(ctx.services(), ctx.pod.metadata.namespace, ctx.pod.spec.enableServiceLinks)
      : undefined;
    config = generateContainerConfig(ctx.pod, container, restartCount, image.ref, ctx.node, env, serviceEnv);
    config.annotations[CONTAINER_BACKOFF_STREAK_ANNOTATION] = String(bo.streak);
    // makeMounts: a subPathExpr is expanded from the container's env; a subPath is bound safely onto a target
    // under the pod dir, and the runtime gets the target.
    const expanded = new Map<number, string>();
    if (container.volumeMounts?.some((m) => m.subPathExpr)) {
      const vars = containerEnv(container, env, serviceEnv);
      for (const [i, m] of container.volumeMounts.entries())
        if (m.subPathExpr) expanded.set(i, expandSubPathExpr(m.subPathExpr, vars));
    }
    for (const [i, bind] of subPathBinds(ctx.pod, container, ctx.node, expanded)) {
      if (!ctx.podDirs) throw new Error("subPath needs the node filesystem, which this deployment does not have");
      try {
        await ctx.podDirs.bindSubPath(bind);
      } catch (e) {
        throw new StepError(
          "CreateContainerConfigError",
          subPathStepMessage(container.volumeMounts![i]!.name, container.name, e),
          e,
        );
      }
      config.mounts[i]!.hostPath = bind.target;
    }
    // makeMounts: the termination-message file, one per instance, bind-mounted at terminationMessagePath.
    if (ctx.terminationFiles && container.terminationMessagePath) {
      const hostPath = await ctx.terminationFiles.create(
        podContainerDir(ctx.node.rootDir, ctx.pod.metadata.uid, container.name),
      );
      config.mounts.push(create(MountSchema, { containerPath: container.terminationMessagePath, hostPath }));
    }
    // makeMounts: the kubelet-managed /etc/hosts, once the pod has an IP.
    if (ctx.podDirs?.writeHostsFile) {
      const podIPs = (await ctx.downward()).podIPs;
      if (mountsEtcHosts(container, podIPs)) {
        const aliases = ctx.pod.spec.hostAliases;
        const [hostname, domain] = podHostnameAndDomain(ctx.pod, ctx.node);
        const content = ctx.pod.spec.hostNetwork
          ? nodeHostsFileContent((await ctx.podDirs.readNodeHosts?.()) ?? "", aliases)
          : managedHostsFileContent(podIPs, hostname, domain, aliases);
        const file = etcHostsFile(ctx.node.rootDir, ctx.pod.metadata.uid);
        await ctx.podDirs.writeHostsFile(file, content);
        config.mounts.push(create(MountSchema, { containerPath: ETC_HOSTS_PATH, hostPath: file }));
      }
    }
  } catch (e) {
    if (e instanceof StepError) throw e;
    throw new StepError("CreateContainerConfigError", errorMessage(e), e);
  }
  let id: string;
  try {
    id = (await ctx.cri.createContainer({ podSandboxId: ctx.sandboxId, config, sandboxConfig: ctx.sandboxConfig }))
      .containerId;
  } catch (e) {
    throw new StepError("CreateContainerError", errorMessage(e), e);
  }
  ctx.created.push(id);
  try {
    await ctx.cri.startContainer({ containerId: id });
  } catch (e) {
    throw new StepError("RunContainerError", errorMessage(e), e);
  }
  await runPostStart(ctx, container, id);
  return `${image.event}; started ${id} (restartCount ${restartCount})`;
}

export async function syncPod(
  cri: CriClient,
  pod: Pod,
  status: PodStatus,
  options: SyncOptions = {},
  actions: PodActions = computePodActions(pod, status),
): Promise<PodSyncResult & { actions: PodActions; made: MadeObjects }> {
  const node = options.node ?? defaultNodeConfig();
  const steps = new Steps();
  const objects = options.objects ?? NO_OBJECTS;
  const pullSecrets = resolvePullSecrets(pod.spec.imagePullSecrets, objects);
  const secrets = [...secretStrings(pullSecrets), ...secretValues(objects)];
  const done = () => {
    // A runtime error text could echo registry credentials; they never leave in a step message.
    if (secrets.length) for (const st of steps.steps) if (st.message) st.message = redact(st.message, secrets);
    return { ok: steps.steps.every((s) => s.ok), steps: steps.steps, actions, made };
  };
  const made: MadeObjects = { containers: [] };

  const hooks: KillHooks = { network: options.hookNetwork, hostIPs: options.hostIPs };
  // Step 2: kill the pod, or the containers that must go.
  const removed = new Set<string>();
  if (!(await killForSync(cri, pod, status, actions, steps, hooks, removed))) return done();
  if (!(await setUpPodVolumes(pod, actions, node, objects, options, steps))) return done();

  // Steps 3-4: a new sandbox. Its config is also what image pulls and CreateContainer are given; a sync
  // with nothing to start (the converged case) never builds it.
  let sandboxId = actions.sandboxId;
  let built: PodSandboxConfig | undefined;
  const sandboxConfig = () => (built ??= generatePodSandboxConfig(pod, actions.attempt, node));
  if (actions.createSandbox) {
    const ok = await steps.run(
      "CreatePodSandbox",
      formatPod(pod),
      async () => {
        const sentAt = (options.now ?? Date.now)();
        sandboxId = (await cri.runPodSandbox({ config: sandboxConfig() })).podSandboxId;
        made.sandbox = { id: sandboxId, config: sandboxConfig(), sentAt };
        return `sandbox ${sandboxId} (attempt ${actions.attempt})`;
      },
      "CreatePodSandboxError",
    );
    if (!ok) return done();
  }

  const startedNames = new Set<string>();
  if (actions.initContainersToStart.length || actions.containersToStart.length) {
    const ctx: StartContext = {
      cri,
      pod,
      signal: options.signal,
      // After a new sandbox the old instances still count for restart counts and back-off, as in kubelet.
      status,
      sandboxId,
      sandboxConfig: sandboxConfig(),
      node,
      terminationFiles: options.terminationFiles,
      podDirs: options.podDirs,
      now: (options.now ?? Date.now)(),
      pullTimeoutMs: options.pullTimeoutMs ?? 120_000,
      pullBackOff: options.pullBackOff ?? defaultPullBackOff,
      images: new Map(),
      ...(options.onPulling ? { onPulling: options.onPulling } : {}),
      ...(pullSecrets ? { pullSecrets } : {}),
      services: options.services,
      objects,
      downward: downwardInfo(
        cri,
        pod,
        status,
        actions.createSandbox ? sandboxId : undefined,
        node,
        options.hostIPs ?? [],
        options.podDirs?.writeHostsFile !== undefined,
        (s) => {
          if (made.sandbox) made.sandbox.status = s;
        },
      ),
      hooks,
      created: made.containers,
    };
    if (!(await startInitContainers(ctx, actions, steps, startedNames))) {
      await collectGarbage(cri, status, startedNames, removed, steps);
      return done();
    }
    await startAppContainers(ctx, actions, steps, startedNames, options.signal);
  }

  // Step 7: what kubelet's GC would clean up (never the newest sandbox, never the newest dead instance).
  await collectGarbage(cri, status, startedNames, removed, steps);
  return done();
}

/** SyncPod's step 2: kill the pod (then purge its init containers if a new sandbox follows), or the containers
 * that must go. False when a kill failed: the sync stops there. */
async function killForSync(
  cri: CriClient,
  pod: Pod,
  status: PodStatus,
  actions: PodActions,
  steps: Steps,
  hooks: KillHooks,
  removed: Set<string>,
): Promise<boolean> {
  if (actions.killPod) {
    if (!(await killPod(cri, pod, status, steps, hooks))) return false;
    // purgeInitContainers: a new sandbox runs initialization again from the first init container, so
    // no earlier init instance may make it look done.
    if (actions.createSandbox) {
      const initNames = new Set((pod.spec.initContainers ?? []).map((c) => c.name));
      const purge = status.containerStatuses.filter((c) => initNames.has(c.name));
      await Promise.all(
        purge.map((c) =>
          steps.run(
            "RemoveContainer",
            c.name,
            () => cri.removeContainer({ containerId: c.id }).then(() => `purged init container ${c.id}`),
            "RemoveContainerError",
          ),
        ),
      );
      for (const c of purge) removed.add(c.id);
    }
    return true;
  }
  for (const [id, info] of Object.entries(actions.containersToKill)) {
    const c = status.containerStatuses.find((s) => s.id === id) ?? { id, name: info.name };
    const ok = await steps.run(
      "KillContainer",
      info.name,
      () =>
        killContainer(cri, pod, c, killGraceSeconds(pod, info), { hooks, podIPs: status.ips }).then((hook) =>
          [info.message, hook].filter(Boolean).join("; "),
        ),
      "KillContainerError",
    );
    if (!ok) return false;
  }
  return true;
}

/** The volume manager's part before SyncPod starts anything; false when a volume failed (nothing starts). */
async function setUpPodVolumes(
  pod: Pod,
  actions: PodActions,
  node: NodeConfig,
  objects: PodObjects,
  options: SyncOptions,
  steps: Steps,
): Promise<boolean> {
  // kubelet's volume manager mounts the pod's volumes before SyncPod runs (WaitForAttachAndMount): podsync
  // does it here, whenever something is to be started, and starts nothing if a volume fails.
  const starting =
    actions.createSandbox || actions.initContainersToStart.length > 0 || actions.containersToStart.length > 0;
  if (starting && options.volumeHost && needsSetUp(pod)) {
    const host = options.volumeHost;
    if (
      !(await steps.run(
        "MountVolumes",
        formatPod(pod),
        () => setUpVolumes(host, pod, node, actions.createSandbox),
        "FailedMount",
      ))
    )
      return false;
  }
  // The file volumes (configMap, secret, downwardAPI, projected) are written at every sync, so a changed
  // ConfigMap reaches running containers (kubelet's volume manager refreshes them on its own period). When
  // something starts, volumes no longer in the spec go too (kubelet's volume reconciler unmounts them), so no
  // Secret outlives its use on the node. A step only when a file changed or the write failed.
  if ((hasFileVolumes(pod) || (starting && options.volumeFiles)) && !(actions.killPod && !actions.createSandbox)) {
    if (!(await mountVolumes(pod, objects, node, options, steps, starting))) return false;
  }
  return true;
}

/** SyncPod's step 5: the init containers, in order; false at a regular one that failed to start (a sidecar
 * that failed is skipped: the next sync restarts it). */
async function startInitContainers(
  ctx: StartContext,
  actions: PodActions,
  steps: Steps,
  startedNames: Set<string>,
): Promise<boolean> {
  for (const idx of actions.initContainersToStart) {
    const init = ctx.pod.spec.initContainers![idx]!;
    startedNames.add(init.name);
    if (
      !(await steps.run("InitContainer", init.name, () => startContainer(ctx, init), "RunInitContainerError")) &&
      !isRestartableInitContainer(init)
    )
      return false;
  }
  return true;
}

/** SyncPod's step 6: app containers, each on its own; one failing does not stop the others. With a postStart
 * hook among them they start one after another, as kubelet starts them: a hook runs before the next container. */
async function startAppContainers(
  ctx: StartContext,
  actions: PodActions,
  steps: Steps,
  startedNames: Set<string>,
  signal: AbortSignal | undefined,
): Promise<void> {
  const toStart = actions.containersToStart.map((i) => ctx.pod.spec.containers[i]!);
  const appSteps = toStart.map(() => new Steps());
  const startOne = (c: Container, i: number) => {
    startedNames.add(c.name);
    return appSteps[i]!.run("StartContainer", c.name, () => startContainer(ctx, c), "RunContainerError");
  };
  if (toStart.some((c) => c.lifecycle?.postStart))
    for (const [i, c] of toStart.entries()) {
      if (signal?.aborted) break; // the pod is being deleted: nothing more starts
      await startOne(c, i);
    }
  else await Promise.all(toStart.map(startOne));
  for (const s of appSteps) steps.steps.push(...s.steps);
}

/** The downward API's view of this sync, read lazily: a pod IP costs a PodSandboxStatus only after a new
 * sandbox, and only when a container to start takes status.podIP(s) (kubelet reads it after every
 * RunPodSandbox). A hostNetwork pod's IPs are the node's, as in its status. The status read is handed to
 * `onRead` (the sync's read-back reuses it). */
function downwardInfo(
  cri: CriClient,
  pod: Pod,
  status: PodStatus,
  newSandboxId: string | undefined,
  node: NodeConfig,
  hostIPs: readonly string[],
  hostsFile: boolean,
  onRead: (s: PodSandboxStatus) => void,
): () => Promise<DownwardInfo> {
  let info: Promise<DownwardInfo> | undefined;
  const read = async (): Promise<DownwardInfo> => {
    if (pod.spec.hostNetwork) return { node, hostIPs, podIPs: hostIPs.slice(0, 2) };
    // The kubelet-managed /etc/hosts, the downward API's status.podIP(s), or a postStart httpGet hook aimed at
    // the pod's IP.
    const wanted =
      hostsFile ||
      [...(pod.spec.initContainers ?? []), ...pod.spec.containers].some(
        (c) =>
          needsPodIPs(c) ||
          (c.lifecycle?.postStart?.httpGet !== undefined && c.lifecycle.postStart.httpGet.host === undefined),
      );
    if (!newSandboxId || !wanted) return { node, hostIPs, podIPs: status.ips };
    const s = (await cri.podSandboxStatus({ podSandboxId: newSandboxId })).status;
    if (s) onRead(s);
    const ips = [s?.network?.ip ?? "", ...(s?.network?.additionalIps ?? []).map((a) => a.ip)].filter(Boolean);
    return { node, hostIPs, podIPs: sortPodIPs(ips) };
  };
  return () => (info ??= read());
}

/** Write the pod's file volumes; a step only when a file changed or the write failed (FailedMount). */
async function mountVolumes(
  pod: Pod,
  objects: PodObjects,
  node: NodeConfig,
  options: SyncOptions,
  steps: Steps,
  prune: boolean,
): Promise<boolean> {
  const files = options.volumeFiles;
  const t0 = performance.now();
  let changed = 0;
  let removed = 0;
  let error: string | undefined;
  if (!files) error = "this deployment has no node filesystem for configMap, secret, downwardAPI or projected volumes";
  else {
    try {
      // Volume files hold no pod IP (the downward API allows none in volumes), so no runtime read is needed.
      const payloads = volumePayloads(pod, objects, { node, hostIPs: options.hostIPs ?? [], podIPs: [] });
      // kubelet's volume operations back off exponentially after a failure (volume-backoff.ts): a volume whose
      // write keeps failing is not written at every sync.
      const backOff = options.volumeBackOff ?? defaultVolumeBackOff;
      const now = (options.now ?? Date.now)();
      for (const p of payloads) {
        const held = backOff.held(p, now);
        if (held) throw new Error(held);
        try {
          if (await files.write(p)) changed++;
          backOff.succeed(p);
        } catch (e) {
          backOff.fail(p, errorMessage(e), now);
          throw e;
        }
      }
      if ((prune || changed > 0) && files.list) {
        const keep = new Set(payloads.map((p) => p.dir));
        for (const plugin of FILE_VOLUME_PLUGINS) {
          const dir = `${podVolumesDir(node.rootDir, pod.metadata.uid)}/${plugin}`;
          for (const name of await files.list(dir))
            if (!keep.has(`${dir}/${name}`)) {
              await files.removeAll(`${dir}/${name}`);
              removed++;
            }
        }
      }
    } catch (e) {
      error = errorMessage(e);
    }
  }
  if (error === undefined && changed === 0 && removed === 0) return true;
  const step = {
    action: "MountVolumes" as const,
    target: formatPod(pod),
    ok: error === undefined,
    durationMs: Math.round((performance.now() - t0) * 100) / 100,
  };
  const did = [
    changed ? `wrote ${changed} volume(s)` : "",
    removed ? `removed ${removed} volume(s) no longer in the spec` : "",
  ]
    .filter(Boolean)
    .join("; ");
  steps.steps.push(
    error === undefined
      ? { ...step, message: did }
      : { ...step, error: "FailedMount", message: `MountVolume.SetUp failed: ${error}` },
  );
  return error === undefined;
}
