// Images for a container start: kubelet's EnsureImageExists per imagePullPolicy, registry credentials from
// the inline pull secrets (credentialprovider's keyring lookup), and keeping those credentials out of messages.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Container, Pod, PullSecret } from "../pod/schema.js";
import type { CriClient } from "../cri/client.js";
import { errorMessage } from "../cri/errors.js";
import type { AuthConfigSchema, PodSandboxConfig } from "../gen/runtime/v1/api_pb.js";
import { BACKOFF_INITIAL_MS, BACKOFF_MAX_MS, formatGoDuration, type PullBackOffStore } from "../container/backoff.js";
import type { ImageUser } from "./config/security.js";
import { StepError } from "../container/steps.js";

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
export function pullCredentials(
  image: string,
  secrets: readonly PullSecret[] | undefined,
): MessageInitShape<typeof AuthConfigSchema>[] {
  const registry = imageRegistry(image);
  const out: MessageInitShape<typeof AuthConfigSchema>[] = [];
  for (const s of secrets ?? []) {
    for (const [key, a] of Object.entries(s.auths ?? {})) {
      if (normaliseRegistryKey(key) !== registry) continue;
      let { username, password } = a;
      if (a.auth && !username) {
        const decoded = atob(a.auth);
        const i = decoded.indexOf(":");
        if (i > 0) [username, password] = [decoded.slice(0, i), decoded.slice(i + 1)];
      }
      // No serverAddress, as kubelet's keyring (pkg/credentialprovider/keyring.go: Username, Password, Email
      // only): containerd parses it as a URL and keeps the credentials only when its host is the registry's,
      // so a bare "host:port" fails the pull ("first path segment in URL cannot contain colon") and a bare
      // "host" silently pulls without credentials (both seen on containerd 1.6).
      out.push({
        username: username ?? "",
        password: password ?? "",
        identityToken: a.identitytoken ?? "",
        registryToken: a.registrytoken ?? "",
      });
    }
  }
  return out;
}

/** Every credential string in the pull secrets (and the password inside a base64 `auth`). */
export function secretStrings(secrets: readonly PullSecret[] | undefined): string[] {
  const out: string[] = [];
  for (const s of secrets ?? [])
    for (const a of Object.values(s.auths ?? {})) {
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

const CREDENTIAL_FIELDS = ["password", "auth", "identitytoken", "registrytoken"] as const;

/** Pull secrets as a response may show them: names, registries and usernames; every credential "[redacted]". */
export function withoutCredentials(secrets: readonly PullSecret[]): PullSecret[] {
  return secrets.map((s) => {
    if (!s.auths) return s;
    const auths = Object.fromEntries(
      Object.entries(s.auths).map(([key, a]) => {
        const shown = { ...a };
        for (const f of CREDENTIAL_FIELDS) if (shown[f] !== undefined) shown[f] = "[redacted]";
        return [key, shown];
      }),
    );
    return { ...s, auths };
  });
}

export function redact(text: string, secrets: readonly string[]): string {
  let t = text;
  for (const s of secrets) if (t.includes(s)) t = t.split(s).join("[redacted]");
  return t;
}

/** What image handling needs from the sync in progress. */
export interface ImageContext {
  cri: CriClient;
  pod: Pod;
  sandboxConfig: PodSandboxConfig;
  now: number;
  pullTimeoutMs: number;
  pullBackOff: PullBackOffStore;
  /** One ImageStatus/PullImage per distinct image per sync. */
  images: Map<string, Promise<EnsuredImage>>;
  /** The pod's pull secrets with named ones resolved from its Secrets (default: the spec's inline ones). */
  pullSecrets?: readonly PullSecret[];
  /** Told as a pull starts, with the container that asked for the image first. */
  onPulling?: (pod: Pod, container: string, image: string) => void;
}

export interface EnsuredImage {
  ref: string;
  /** From ImageStatus when it was read (IfNotPresent/Never); undefined after a pull. */
  user: ImageUser | undefined;
  /** kubelet's Pulled event text (pkg/kubelet/images/image_manager.go): "already present" or "Successfully
   * pulled ... in <duration>", so a sync's steps show whether the image was pulled. */
  event: string;
}

/** EnsureImageExists per imagePullPolicy. One ImageStatus/PullImage per distinct image per sync. */
export async function ensureImage(ctx: ImageContext, container: Container): Promise<EnsuredImage> {
  const policy = container.imagePullPolicy ?? "IfNotPresent";
  const key = `${policy}\u0000${container.image}`;
  let p = ctx.images.get(key);
  if (!p) {
    p = pullOrInspect(ctx, container.image, policy, container.name);
    ctx.images.set(key, p);
  }
  return p;
}

export async function inspect(ctx: ImageContext, image: string): Promise<EnsuredImage | undefined> {
  try {
    const r = await ctx.cri.imageStatus({ image: { image } });
    return r.image?.id
      ? {
          ref: r.image.id,
          user: { uid: r.image.uid?.value, username: r.image.username },
          event: `Container image "${image}" already present on machine`,
        }
      : undefined;
  } catch (e) {
    throw new StepError("ImageInspectError", `Failed to inspect image "${image}": ${errorMessage(e)}`, e);
  }
}

async function pullOrInspect(
  ctx: ImageContext,
  image: string,
  policy: "Always" | "IfNotPresent" | "Never",
  container: string,
): Promise<EnsuredImage> {
  if (policy !== "Always") {
    const present = await inspect(ctx, image);
    if (present) return present;
    if (policy === "Never")
      throw new StepError("ErrImageNeverPull", `Container image "${image}" is not present with pull policy of Never`);
  }
  const backOffKey = `${ctx.pod.metadata.uid}\u0000${image}`;
  const bo = ctx.pullBackOff.get(backOffKey);
  if (bo && ctx.now < bo.until) throw new StepError("ImagePullBackOff", `Back-off pulling image "${image}"`);
  const creds = pullCredentials(image, ctx.pullSecrets ?? ctx.pod.spec.imagePullSecrets);
  let lastErr: unknown;
  // kubelet's image manager records Pulling before it pulls (pkg/kubelet/images/image_manager.go).
  ctx.onPulling?.(ctx.pod, container, image);
  const t0 = performance.now();
  for (const auth of creds.length ? creds : [undefined]) {
    try {
      const r = await ctx.cri.pullImage(
        { image: { image }, auth, sandboxConfig: ctx.sandboxConfig },
        { timeoutMs: ctx.pullTimeoutMs },
      );
      ctx.pullBackOff.delete(backOffKey);
      return {
        ref: r.imageRef,
        user: undefined,
        event: `Successfully pulled image "${image}" in ${formatGoDuration(performance.now() - t0)}`,
      };
    } catch (e) {
      lastErr = e;
    }
  }
  const delayMs = bo ? Math.min(BACKOFF_MAX_MS, bo.delayMs * 2) : BACKOFF_INITIAL_MS;
  ctx.pullBackOff.set(backOffKey, { until: ctx.now + delayMs, delayMs });
  throw new StepError("ErrImagePull", `Failed to pull image "${image}": ${errorMessage(lastErr)}`, lastErr);
}
