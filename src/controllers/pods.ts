// What every controller needs about pods: the observed pod (its spec and its v1.PodStatus as kubelet generates
// it), readiness and availability (pkg/api/v1/pod/util.go IsPodReady, IsPodAvailable), controller references
// (metav1.NewControllerRef, GetControllerOf), and the random name suffix the API server gives a generateName
// (apimachinery's rand.String(5): lower-case consonants and digits that spell no words).
import type { OwnerReference, Pod } from "../pod/schema.js";
import type { V1PodStatus } from "../status/api-status.js";

export interface ObservedPod {
  pod: Pod;
  /** undefined while the runtime has nothing of it yet (just stored, not synced). */
  status: V1PodStatus | undefined;
  /** Asked gone: out of the desired state, its delete still running (the API server's deletionTimestamp). */
  terminating?: boolean;
  /** When it was stored (ms): the pod's creationTimestamp. */
  createdAt: number;
}

export const phaseOf = (p: ObservedPod) => p.status?.phase ?? "Pending";
export const isTerminal = (p: ObservedPod) => phaseOf(p) === "Succeeded" || phaseOf(p) === "Failed";
/** controller.IsPodActive: not terminal and not being deleted. */
export const isActive = (p: ObservedPod) => !isTerminal(p) && !p.terminating;

/** IsPodReady: the Ready condition is True. */
export const isReady = (p: ObservedPod) =>
  p.status?.conditions.some((c) => c.type === "Ready" && c.status === "True") ?? false;

/** IsPodAvailable: ready for at least minReadySeconds (the Ready condition's lastTransitionTime). */
export function isAvailable(p: ObservedPod, minReadySeconds: number, now: number): boolean {
  if (!isReady(p)) return false;
  if (minReadySeconds === 0) return true;
  const c = p.status!.conditions.find((x) => x.type === "Ready");
  const since = c?.lastTransitionTime ? Date.parse(c.lastTransitionTime) : NaN;
  return Number.isFinite(since) && since + minReadySeconds * 1000 <= now;
}

/** When a ready-but-not-yet-available pod becomes available (ms), for the controller's next look. */
export function availableAt(p: ObservedPod, minReadySeconds: number): number | undefined {
  if (!isReady(p) || minReadySeconds === 0) return undefined;
  const c = p.status!.conditions.find((x) => x.type === "Ready");
  const since = c?.lastTransitionTime ? Date.parse(c.lastTransitionTime) : NaN;
  return Number.isFinite(since) ? since + minReadySeconds * 1000 : undefined;
}

/** metav1.NewControllerRef. */
export function controllerRef(owner: {
  apiVersion: string;
  kind: string;
  metadata: { name: string; uid?: string | undefined };
}): OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** metav1.GetControllerOf: the owner reference with controller: true. */
export const controllerOf = (meta: { ownerReferences?: OwnerReference[] | undefined }) =>
  meta.ownerReferences?.find((r) => r.controller === true);

const ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789";

/** rand.String(n): n characters of ALPHANUMS. */
export function randomSuffix(n = 5, random: () => number = Math.random): string {
  let s = "";
  for (let i = 0; i < n; i++) s += ALPHANUMS[Math.floor(random() * ALPHANUMS.length)];
  return s;
}

/** rand.SafeEncodeString: each character mapped into ALPHANUMS (a hash's digits as a name part). */
export function safeEncodeString(s: string): string {
  let out = "";
  for (const ch of s) out += ALPHANUMS[ch.codePointAt(0)! % ALPHANUMS.length];
  return out;
}

/** The pod name a generateName of `base-` gets (names.SimpleNameGenerator: the base cut to 58 characters). */
export const generatedName = (base: string, suffix: string) => `${(`${base}-`).slice(0, 58)}${suffix}`;

/** A count or a percentage of `total` (intstr.GetScaledValueFromIntOrPercent). */
export function scaledValue(
  v: number | string | undefined,
  total: number,
  roundUp: boolean,
  dflt: number | string,
): number {
  const x = v ?? dflt;
  if (typeof x === "number") return x;
  const pct = Number(x.slice(0, -1));
  const raw = (pct * total) / 100;
  return roundUp ? Math.ceil(raw) : Math.floor(raw);
}
