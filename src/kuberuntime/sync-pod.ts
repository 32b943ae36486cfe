// SyncPod: carry out computePodActions over CRI, the way kubelet's kubeGenericRuntimeManager.SyncPod does,
// and report every step. Steps, in kubelet's order:
//   1. compute actions; 2. kill the pod, or the listed containers; 3-4. create the sandbox (with Attempt);
//   5. start the next init container and stop on failure; 6. start ContainersToStart, going on past failures.
// Then (podsync only) 7. remove dead instances the way kubelet's container GC would.
//
// Deliberate differences from kubelet, each small:
// - App containers in step 6 are started concurrently (kubelet loops); each still gets its own step, in spec order.
// - After RunPodSandbox kubelet reads PodSandboxStatus for the pod IP it feeds to the downward API and
//   /etc/hosts; podsync has neither, so it skips that round trip.
// - Crash-loop back-off is derived from the runtime (restart count / back-off streak annotation and the
//   newest exited instance's finish time), not from an in-memory flowcontrol.Backoff.
// - kubelet leaves dead containers and sandboxes to its garbage collector; a stateless function has no GC
//   loop, so step 7 does what GC would with kubelet's defaults (keep one dead instance per container name,
//   keep the newest sandbox, remove older non-ready sandboxes that hold no containers).
import type { Container, Pod, PullSecret } from "../api/pod-schema.js";
import type { CriClient } from "../cri/client.js";
import { CriError, errorMessage, GrpcCode, isCriError } from "../cri/errors.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { PodSandboxState, type AuthConfigSchema, type PodSandboxConfig } from "../gen/runtime/v1/api_pb.js";
import { computePodActions } from "./compute-actions.js";
import { generateContainerConfig, generatePodSandboxConfig, defaultNodeConfig, needsImageUser, verifyRunAsNonRoot, type ImageUser, type NodeConfig } from "./config.js";
import { findContainerStatusByName, getPodStatus } from "./pod-status.js";
import { CONTAINER_BACKOFF_STREAK_ANNOTATION } from "./labels.js";
import type { ContainerStatus, PodActions, PodStatus, PodSyncResult, SyncAction, SyncStep } from "./types.js";

export interface PullBackOffStore {
  /** ms timestamp until which pulls of this key are backed off, and the current delay. */
  get(key: string): { until: number; delayMs: number } | undefined;
  set(key: string, value: { until: number; delayMs: number }): void;
  delete(key: string): void;
}

export interface SyncOptions {
  node?: NodeConfig;
  now?: () => number;
  /** Deadline for PullImage (ms). */
  pullTimeoutMs?: number;
  /** Image pull back-off is the one piece of kubelet state with no record in the runtime (a failed pull
   * leaves no container); it lives here, in memory by default. Losing it costs one early retry. */
  pullBackOff?: PullBackOffStore;
}

/** kubelet's container restart back-off (pkg/kubelet/kubelet.go: backOffPeriod 10 s, MaxContainerBackOff 300 s). */
export const BACKOFF_INITIAL_MS = 10_000;
export const BACKOFF_MAX_MS = 300_000;
const MIN_GRACE_SECONDS = 2; // kuberuntime_container.go minimumGracePeriodInSeconds

export class MemoryPullBackOff implements PullBackOffStore {
  private readonly map = new Map<string, { until: number; delayMs: number }>();
  get(key: string) {
    return this.map.get(key);
  }
  set(key: string, v: { until: number; delayMs: number }) {
    if (this.map.size > 10_000) this.map.clear();
    this.map.set(key, v);
  }
  delete(key: string) {
    this.map.delete(key);
  }
}
const defaultPullBackOff = new MemoryPullBackOff();

/** kubelet's format.Pod: name_namespace(uid). */
export const formatPod = (pod: { metadata: PodRef }) => `${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`;

export interface PodRef {
  uid: string;
  name: string;
  namespace: string;
}

/** What killing a pod needs: who it is and how long its containers get to stop. */
export interface KillTarget {
  metadata: PodRef;
  /** Without a grace period each container gets the one it was started with (its annotation), else 30 s. */
  spec: { terminationGracePeriodSeconds: number | undefined };
}

class Steps {
  readonly steps: SyncStep[] = [];
  async run(action: SyncAction, target: string, fn: () => Promise<string | void>, errorReason: string): Promise<boolean> {
    const t0 = performance.now();
    const step: SyncStep = { action, target, ok: true, durationMs: 0 };
    this.steps.push(step);
    try {
      const msg = await fn();
      if (msg) step.message = msg;
    } catch (e) {
      fail(step, e, errorReason);
    }
    step.durationMs = Math.round((performance.now() - t0) * 100) / 100;
    return step.ok;
  }
}

/** A step failure with a kubelet error reason (CrashLoopBackOff, ErrImagePull, ...). */
export class StepError extends Error {
  constructor(
    readonly reason: string,
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

function fail(step: SyncStep, e: unknown, reason: string) {
  step.ok = false;
  if (e instanceof StepError) {
    step.error = e.reason;
    step.message = e.message;
    if (e.cause instanceof CriError) step.grpcCode = e.cause.codeName;
  } else {
    step.error = reason;
    step.message = errorMessage(e);
    if (e instanceof CriError) step.grpcCode = e.codeName;
  }
}

/** The crash-loop delay after an instance with this back-off streak exited: 0, 10 s, 20 s, 40 s ... 300 s. */
export function backOffDelayMs(streak: number): number {
  if (streak <= 0) return 0;
  return Math.min(BACKOFF_MAX_MS, BACKOFF_INITIAL_MS * 2 ** Math.min(streak - 1, 30));
}

/** flowcontrol.Backoff resets when an instance ran longer than twice the maximum back-off. */
function backOffExpired(s: ContainerStatus): boolean {
  return s.startedAt > 0 && s.finishedAt - s.startedAt > 2 * BACKOFF_MAX_MS;
}

/** doBackOff, stateless: [in back-off, delay] from the newest exited instance of this container. */
export function crashLoopBackOff(container: Container, status: PodStatus, now: number): { inBackOff: boolean; delayMs: number; streak: number } {
  const last = status.containerStatuses.find((c) => c.name === container.name && c.state === "exited");
  if (!last) return { inBackOff: false, delayMs: 0, streak: 0 };
  if (backOffExpired(last)) return { inBackOff: false, delayMs: 0, streak: 1 };
  const delayMs = backOffDelayMs(last.backoffStreak);
  const inBackOff = delayMs > 0 && now - last.finishedAt < delayMs;
  return { inBackOff, delayMs, streak: last.backoffStreak + 1 };
}

/** The registry host an image reference names (docker's reference normalisation). */
export function imageRegistry(image: string): string {
  const first = image.split("/")[0]!;
  if (image.includes("/") && (first.includes(".") || first.includes(":") || first === "localhost")) return first;
  return "docker.io";
}

function normaliseRegistryKey(key: string): string {
  const host = key.replace(/^https?:\/\//, "").split("/")[0]!;
  return host === "index.docker.io" || host === "registry-1.docker.io" ? "docker.io" : host;
}

/** credentialprovider keyring lookup over the inline pull secrets: every credential for the image's registry, in order. */
export function pullCredentials(image: string, secrets: readonly PullSecret[] | undefined): MessageInitShape<typeof AuthConfigSchema>[] {
  const registry = imageRegistry(image);
  const out: MessageInitShape<typeof AuthConfigSchema>[] = [];
  for (const s of secrets ?? []) {
    for (const [key, a] of Object.entries(s.auths)) {
      if (normaliseRegistryKey(key) !== registry) continue;
      let { username, password } = a;
      if (a.auth && !username) {
        const decoded = atob(a.auth);
        const i = decoded.indexOf(":");
        if (i > 0) [username, password] = [decoded.slice(0, i), decoded.slice(i + 1)];
      }
      out.push({ username: username ?? "", password: password ?? "", serverAddress: key, identityToken: a.identitytoken ?? "", registryToken: a.registrytoken ?? "" });
    }
  }
  return out;
}

/** Every credential string in the pull secrets (and the password inside a base64 `auth`). */
export function secretStrings(secrets: readonly PullSecret[] | undefined): string[] {
  const out: string[] = [];
  for (const s of secrets ?? [])
    for (const a of Object.values(s.auths)) {
      for (const v of [a.password, a.auth, a.identitytoken, a.registrytoken]) if (v && v.length >= 4) out.push(v);
      if (a.auth) {
        try {
          const pw = atob(a.auth).split(":").slice(1).join(":");
          if (pw.length >= 4) out.push(pw);
        } catch {
          /* not base64: the raw value is already listed */
        }
      }
    }
  return out;
}

export function redact(text: string, secrets: readonly string[]): string {
  let t = text;
  for (const s of secrets) if (t.includes(s)) t = t.split(s).join("[redacted]");
  return t;
}

interface StartContext {
  cri: CriClient;
  pod: Pod;
  status: PodStatus;
  sandboxId: string;
  sandboxConfig: PodSandboxConfig;
  node: NodeConfig;
  now: number;
  pullTimeoutMs: number;
  pullBackOff: PullBackOffStore;
  images: Map<string, Promise<EnsuredImage>>;
}

interface EnsuredImage {
  ref: string;
  /** From ImageStatus when it was read (IfNotPresent/Never); undefined after a pull. */
  user: ImageUser | undefined;
}

/** EnsureImageExists per imagePullPolicy. One ImageStatus/PullImage per distinct image per sync. */
async function ensureImage(ctx: StartContext, container: Container): Promise<EnsuredImage> {
  const policy = container.imagePullPolicy ?? "IfNotPresent";
  const key = `${policy}\u0000${container.image}`;
  let p = ctx.images.get(key);
  if (!p) {
    p = pullOrInspect(ctx, container.image, policy);
    ctx.images.set(key, p);
  }
  return p;
}

async function inspect(ctx: StartContext, image: string): Promise<EnsuredImage | undefined> {
  try {
    const r = await ctx.cri.imageStatus({ image: { image } });
    return r.image?.id ? { ref: r.image.id, user: { uid: r.image.uid?.value, username: r.image.username } } : undefined;
  } catch (e) {
    throw new StepError("ImageInspectError", `Failed to inspect image "${image}": ${errorMessage(e)}`, e);
  }
}

async function pullOrInspect(ctx: StartContext, image: string, policy: "Always" | "IfNotPresent" | "Never"): Promise<EnsuredImage> {
  if (policy !== "Always") {
    const present = await inspect(ctx, image);
    if (present) return present;
    if (policy === "Never")
      throw new StepError("ErrImageNeverPull", `Container image "${image}" is not present with pull policy of Never`);
  }
  const backOffKey = `${ctx.pod.metadata.uid}\u0000${image}`;
  const bo = ctx.pullBackOff.get(backOffKey);
  if (bo && ctx.now < bo.until)
    throw new StepError("ImagePullBackOff", `Back-off pulling image "${image}"`);
  const creds = pullCredentials(image, ctx.pod.spec.imagePullSecrets);
  let lastErr: unknown;
  for (const auth of creds.length ? creds : [undefined]) {
    try {
      const r = await ctx.cri.pullImage({ image: { image }, auth, sandboxConfig: ctx.sandboxConfig }, { timeoutMs: ctx.pullTimeoutMs });
      ctx.pullBackOff.delete(backOffKey);
      return { ref: r.imageRef, user: undefined };
    } catch (e) {
      lastErr = e;
    }
  }
  const delayMs = bo ? Math.min(BACKOFF_MAX_MS, bo.delayMs * 2) : BACKOFF_INITIAL_MS;
  ctx.pullBackOff.set(backOffKey, { until: ctx.now + delayMs, delayMs });
  throw new StepError("ErrImagePull", `Failed to pull image "${image}": ${errorMessage(lastErr)}`, lastErr);
}

/** startContainer: back-off check, image, CreateContainer, StartContainer. Returns a message for the step. */
async function startContainer(ctx: StartContext, container: Container): Promise<string> {
  const bo = crashLoopBackOff(container, ctx.status, ctx.now);
  if (bo.inBackOff)
    throw new StepError("CrashLoopBackOff", `back-off ${bo.delayMs / 1000}s restarting failed container=${container.name} pod=${formatPod(ctx.pod)}`);
  const image = await ensureImage(ctx, container);
  if (needsImageUser(ctx.pod, container) && !image.user) image.user = (await inspect(ctx, image.ref))?.user;
  const nonRoot = verifyRunAsNonRoot(ctx.pod, container, image.user);
  if (nonRoot) throw new StepError("CreateContainerConfigError", nonRoot);
  const prev = findContainerStatusByName(ctx.status, container.name);
  const restartCount = prev ? prev.restartCount + 1 : 0;
  let config;
  try {
    config = generateContainerConfig(ctx.pod, container, restartCount, image.ref, ctx.node);
    config.annotations[CONTAINER_BACKOFF_STREAK_ANNOTATION] = String(bo.streak);
  } catch (e) {
    throw new StepError("CreateContainerConfigError", errorMessage(e), e);
  }
  let id: string;
  try {
    id = (await ctx.cri.createContainer({ podSandboxId: ctx.sandboxId, config, sandboxConfig: ctx.sandboxConfig })).containerId;
  } catch (e) {
    throw new StepError("CreateContainerError", errorMessage(e), e);
  }
  try {
    await ctx.cri.startContainer({ containerId: id });
  } catch (e) {
    throw new StepError("RunContainerError", errorMessage(e), e);
  }
  return `started ${id} (restartCount ${restartCount})`;
}

function gracePeriodSeconds(pod: KillTarget, c?: ContainerStatus): number {
  return Math.max(MIN_GRACE_SECONDS, pod.spec.terminationGracePeriodSeconds ?? c?.gracePeriodSeconds ?? 30);
}

async function stopContainer(cri: CriClient, id: string, graceSeconds: number): Promise<void> {
  try {
    // The call takes up to the grace period; give its deadline room beyond it.
    await cri.stopContainer({ containerId: id, timeout: BigInt(graceSeconds) }, { timeoutMs: (graceSeconds + 10) * 1000 });
  } catch (e) {
    if (!isCriError(e, GrpcCode.NOT_FOUND)) throw e;
  }
}

/** killPodWithSyncResult: stop every running container concurrently, then every sandbox. */
export async function killPod(cri: CriClient, pod: KillTarget, status: PodStatus, steps: Steps): Promise<boolean> {
  const t0 = performance.now();
  const running = status.containerStatuses.filter((c) => c.state === "running");
  // Nothing to kill (a pod seen for the first time): kubelet records empty kill results; podsync leaves them out.
  if (running.length === 0 && status.sandboxStatuses.length === 0) return true;
  const killSteps = new Steps();
  await Promise.all(
    running.map((c) => killSteps.run("KillContainer", c.name, () => stopContainer(cri, c.id, gracePeriodSeconds(pod, c)).then(() => `stopped ${c.id}`), "KillContainerError")),
  );
  steps.steps.push(...killSteps.steps);
  await steps.run(
    "KillPodSandbox",
    pod.metadata.uid,
    async () => {
      const errors: string[] = [];
      await Promise.all(
        status.sandboxStatuses.map((s) =>
          cri.stopPodSandbox({ podSandboxId: s.id }).catch((e) => {
            if (!isCriError(e, GrpcCode.NOT_FOUND)) errors.push(errorMessage(e));
          }),
        ),
      );
      if (errors.length) throw new StepError("KillPodSandboxError", errors.join("; "));
      return `stopped ${status.sandboxStatuses.length} sandbox(es)`;
    },
    "KillPodSandboxError",
  );
  const ok = steps.steps.every((s) => s.ok);
  steps.steps.push({
    action: "KillPod",
    target: formatPod(pod),
    ok,
    ...(ok ? { message: `killed ${running.length} container(s)` } : { error: "KillPodError", message: "see the KillContainer/KillPodSandbox steps" }),
    durationMs: Math.round((performance.now() - t0) * 100) / 100,
  });
  return ok;
}

/** What kubelet's container and sandbox GC would remove, given the status read before this sync. */
export function garbage(status: PodStatus, startedNames: ReadonlySet<string>): { containers: ContainerStatus[]; sandboxes: string[] } {
  const deadKept = new Set<string>();
  const containers: ContainerStatus[] = [];
  for (const c of status.containerStatuses) {
    if (c.state !== "exited" && c.state !== "created") continue;
    // Newest first: keep the newest dead instance per name (MaxPerPodContainer = 1), it carries the restart count.
    if (!deadKept.has(c.name)) {
      deadKept.add(c.name);
      // A created-but-never-started instance that was just replaced is garbage too.
      if (!(c.state === "created" && startedNames.has(c.name))) continue;
    }
    containers.push(c);
  }
  const removed = new Set(containers.map((c) => c.id));
  const holding = new Set(status.containerStatuses.filter((c) => !removed.has(c.id)).map((c) => c.sandboxId));
  const sandboxes = status.sandboxStatuses
    .slice(1)
    .filter((s) => s.state !== PodSandboxState.SANDBOX_READY && !holding.has(s.id))
    .map((s) => s.id);
  return { containers, sandboxes };
}

async function collectGarbage(cri: CriClient, status: PodStatus, startedNames: ReadonlySet<string>, removed: ReadonlySet<string>, steps: Steps): Promise<void> {
  const g = garbage({ ...status, containerStatuses: status.containerStatuses.filter((c) => !removed.has(c.id)) }, startedNames);
  await Promise.all(
    g.containers.map((c) =>
      steps.run("RemoveContainer", c.name, () => cri.removeContainer({ containerId: c.id }).then(() => `removed ${c.id}`), "RemoveContainerError"),
    ),
  );
  await Promise.all(
    g.sandboxes.map((id) => steps.run("RemovePodSandbox", id, () => cri.removePodSandbox({ podSandboxId: id }).then(() => `removed ${id}`), "RemovePodSandboxError")),
  );
}

export async function syncPod(
  cri: CriClient,
  pod: Pod,
  status: PodStatus,
  options: SyncOptions = {},
  actions: PodActions = computePodActions(pod, status),
): Promise<PodSyncResult & { actions: PodActions }> {
  const node = options.node ?? defaultNodeConfig();
  const steps = new Steps();
  const secrets = secretStrings(pod.spec.imagePullSecrets);
  const done = () => {
    // A runtime error text could echo registry credentials; they never leave in a step message.
    if (secrets.length) for (const st of steps.steps) if (st.message) st.message = redact(st.message, secrets);
    return { ok: steps.steps.every((s) => s.ok), steps: steps.steps, actions };
  };

  // Step 2: kill the pod, or the containers that must go.
  const removed = new Set<string>();
  if (actions.killPod) {
    if (!(await killPod(cri, pod, status, steps))) return done();
    // purgeInitContainers: a new sandbox runs initialization again from the first init container, so
    // no earlier init instance may make it look done.
    if (actions.createSandbox) {
      const initNames = new Set((pod.spec.initContainers ?? []).map((c) => c.name));
      const purge = status.containerStatuses.filter((c) => initNames.has(c.name));
      await Promise.all(purge.map((c) => steps.run("RemoveContainer", c.name, () => cri.removeContainer({ containerId: c.id }).then(() => `purged init container ${c.id}`), "RemoveContainerError")));
      for (const c of purge) removed.add(c.id);
    }
  } else {
    for (const [id, info] of Object.entries(actions.containersToKill)) {
      const ok = await steps.run("KillContainer", info.name, () => stopContainer(cri, id, gracePeriodSeconds(pod)).then(() => info.message), "KillContainerError");
      if (!ok) return done();
    }
  }

  // Steps 3-4: a new sandbox. Its config is also what image pulls and CreateContainer are given; a sync
  // with nothing to start (the converged case) never builds it.
  let sandboxId = actions.sandboxId;
  const starting = actions.createSandbox || actions.nextInitContainerToStart !== undefined || actions.containersToStart.length > 0;
  const sandboxConfig = starting ? generatePodSandboxConfig(pod, actions.attempt, node) : undefined;
  if (actions.createSandbox && sandboxConfig) {
    const ok = await steps.run(
      "CreatePodSandbox",
      formatPod(pod),
      async () => {
        sandboxId = (await cri.runPodSandbox({ config: sandboxConfig })).podSandboxId;
        return `sandbox ${sandboxId} (attempt ${actions.attempt})`;
      },
      "CreatePodSandboxError",
    );
    if (!ok) return done();
  }

  const startedNames = new Set<string>();
  if (sandboxConfig && (actions.nextInitContainerToStart || actions.containersToStart.length)) {
    const ctx: StartContext = {
      cri,
      pod,
      // After a new sandbox the old instances still count for restart counts and back-off, as in kubelet.
      status,
      sandboxId,
      sandboxConfig,
      node,
      now: (options.now ?? Date.now)(),
      pullTimeoutMs: options.pullTimeoutMs ?? 120_000,
      pullBackOff: options.pullBackOff ?? defaultPullBackOff,
      images: new Map(),
    };
    // Step 5: the next init container; stop here if it failed to start.
    const init = actions.nextInitContainerToStart;
    if (init) {
      startedNames.add(init.name);
      if (!(await steps.run("InitContainer", init.name, () => startContainer(ctx, init), "RunInitContainerError"))) {
        await collectGarbage(cri, status, startedNames, removed, steps);
        return done();
      }
    }
    // Step 6: app containers, each on its own; one failing does not stop the others.
    const toStart = actions.containersToStart.map((i) => pod.spec.containers[i]!);
    const appSteps = toStart.map(() => new Steps());
    await Promise.all(
      toStart.map((c, i) => {
        startedNames.add(c.name);
        return appSteps[i]!.run("StartContainer", c.name, () => startContainer(ctx, c), "RunContainerError");
      }),
    );
    for (const s of appSteps) steps.steps.push(...s.steps);
  }

  // Step 7: what kubelet's GC would clean up (never the newest sandbox, never the newest dead instance).
  await collectGarbage(cri, status, startedNames, removed, steps);
  return done();
}

/** DELETE: kill the pod (KillPod path), then remove its containers and sandboxes. */
export async function deletePod(cri: CriClient, pod: KillTarget, status: PodStatus): Promise<PodSyncResult> {
  const steps = new Steps();
  if (await killPod(cri, pod, status, steps)) {
    await Promise.all(
      status.containerStatuses.map((c) =>
        steps.run("RemoveContainer", c.name, () => cri.removeContainer({ containerId: c.id }).then(() => `removed ${c.id}`).catch(ignoreNotFound), "RemoveContainerError"),
      ),
    );
    await Promise.all(
      status.sandboxStatuses.map((s) =>
        steps.run("RemovePodSandbox", s.id, () => cri.removePodSandbox({ podSandboxId: s.id }).then(() => `removed ${s.id}`).catch(ignoreNotFound), "RemovePodSandboxError"),
      ),
    );
  }
  return { ok: steps.steps.every((s) => s.ok), steps: steps.steps };
}

function ignoreNotFound(e: unknown): string {
  if (isCriError(e, GrpcCode.NOT_FOUND)) return "already gone";
  throw e;
}

export { Steps };

/** Read the pod's status from the runtime, decide, act: one whole sync. */
export async function syncPodFromRuntime(cri: CriClient, pod: Pod, options: SyncOptions = {}) {
  const status = await getPodStatus(cri, pod.metadata);
  const actions = computePodActions(pod, status);
  const result = await syncPod(cri, pod, status, options, actions);
  return { ...result, status };
}
