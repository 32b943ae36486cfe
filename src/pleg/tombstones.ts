// What the desired state keeps of a pod it no longer holds: a tombstone per removed uid, the removing token's
// iat, for as long as a token issued before it can still be valid (the token lifetime plus the clock skew, from
// that iat). Without it a captured sync signed before a DELETE (or before the PUT /v1/node/pods that dropped the
// pod) would find no stored entry to be older than, and bring the pod back.
//
// The rules, shared by every store (Node's files, the Workers node object, memory) and checked inside each
// store's write:
//   - a per-pod sync older (iat) than the stored entry, or than the pod's tombstone, is refused (409
//     stale-generation); equal iats are not older (one second is the claim's resolution);
//   - one uid is one pod: a sync of a uid the store holds under another namespace/name is refused (409
//     uid-conflict), in the same step as the write, so a refused request leaves the store as it was;
//   - a PUT is ordered against other PUTs by its generation, and against per-pod requests by its iat: a PUT
//     signed before a per-pod sync or DELETE that changed one of the pods it names or drops (since the last PUT)
//     is refused (409 stale-generation naming those pods), so it never silently rolls such a change back.
//     Tombstones a PUT left behind do not order later PUTs (the generation does).
//   - a tombstone knows the removed pod's controller (its ownerReferences' controller, and the stored workload's
//     audit jti the controller put it with): the controller making the pod anew is not a late request, so it is let
//     through at once, as a cluster's controller re-creates a deleted pod (a StatefulSet's pod has the same uid
//     here: it is derived from the name). The tombstone stays, so a request signed before the removal is still
//     refused, pod re-made or not. Only the controller's own put can carry that jti: a request's entry carries its
//     token's jti, which the replay store lets act once.
import { StaleGenerationError, type DesiredPod } from "./desired-pod.js";
import { UidConflictError } from "../kuberuntime/pod-identity.js";

export interface Tombstone {
  /** The removing token's iat (seconds). */
  iat: number;
  /** When it may be forgotten (ms since the epoch): no token issued before `iat` is valid after it. */
  until: number;
  /** Set when a PUT /v1/node/pods dropped the pod (that set's generation); absent for a DELETE. */
  generation?: number | undefined;
  /** storedAt of the entry it removed, if there was one: a store that writes the tombstone before removing the
   * entry finishes an interrupted removal at load (the same entry still there) and no other. */
  removed?: number | undefined;
  /** The removed pod's controller (uid) and the audit jti its entry was put with (the stored workload's). */
  owner?: { uid: string; jti: string } | undefined;
}

/** The default window: the verifier's default token lifetime (300 s) plus its clock skew (30 s). */
export const DEFAULT_TOMBSTONE_SECONDS = 330;

export function tombstone(iat: number, windowSeconds: number, removed?: DesiredPod, generation?: number): Tombstone {
  const owner = removed && controllerUid(removed);
  const jti = removed?.audit.jti;
  return {
    iat,
    until: (iat + windowSeconds) * 1000,
    ...(generation !== undefined ? { generation } : {}),
    ...(removed ? { removed: removed.storedAt } : {}),
    ...(owner && jti ? { owner: { uid: owner, jti } } : {}),
  };
}

const controllerUid = (e: DesiredPod) => e.pod.metadata.ownerReferences?.find((r) => r.controller === true)?.uid;

/** The removed pod's controller making it anew (its entry put with the same workload's audit): let through, and the
 * tombstone kept for the requests signed before the removal. */
export function ownerRecreates(tomb: Tombstone | undefined, entry: DesiredPod): boolean {
  return tomb?.owner !== undefined && controllerUid(entry) === tomb.owner.uid && entry.audit.jti === tomb.owner.jti;
}

/** Drop the tombstones no valid token can be older than any more; true when any went. */
export function pruneTombstones(t: Map<string, Tombstone>, now: number): boolean {
  let changed = false;
  for (const [uid, x] of t)
    if (x.until <= now) {
      t.delete(uid);
      changed = true;
    }
  return changed;
}

/** A per-pod sync (put): the iat against the stored entry and the tombstone, and the pod's identity. */
export function checkPut(stored: DesiredPod | undefined, entry: DesiredPod, tomb?: Tombstone): void {
  const m = entry.pod.metadata;
  const s = stored?.pod.metadata;
  if (s && (s.namespace !== m.namespace || s.name !== m.name))
    throw new UidConflictError(
      { uid: m.uid, namespace: m.namespace, name: m.name },
      { namespace: s.namespace, name: s.name },
    );
  if (stored && entry.audit.iat < stored.audit.iat)
    throw new StaleGenerationError(
      `pod ${m.uid} was last changed by a token issued at ${stored.audit.iat}; this token was issued at ${entry.audit.iat} (older): refused, nothing changed`,
      stored.audit.iat,
    );
  // Without a stored entry; or with one its controller made anew after the removal (the tombstone stays for it).
  if (tomb && entry.audit.iat < tomb.iat && !ownerRecreates(tomb, entry))
    throw new StaleGenerationError(
      `pod ${m.uid} was removed (${tomb.generation !== undefined ? `dropped by PUT /v1/node/pods at generation ${tomb.generation}` : "DELETE"}) by a token issued at ${tomb.iat}; this token was issued at ${entry.audit.iat} (older): refused, nothing changed`,
      tomb.iat,
    );
}

/** A PUT's set at `iat`: refused if it would overwrite, drop or bring back a pod a per-pod request changed with
 * a newer token, or if an item's uid is stored under another namespace/name. */
export function checkSet(
  pods: ReadonlyMap<string, DesiredPod>,
  tombs: ReadonlyMap<string, Tombstone>,
  entries: readonly DesiredPod[],
  iat: number,
): void {
  for (const e of entries) {
    const s = pods.get(e.pod.metadata.uid)?.pod.metadata;
    const m = e.pod.metadata;
    if (s && (s.namespace !== m.namespace || s.name !== m.name))
      throw new UidConflictError(
        { uid: m.uid, namespace: m.namespace, name: m.name },
        { namespace: s.namespace, name: s.name },
      );
  }
  const newer: string[] = [];
  for (const [uid, p] of pods)
    if (p.audit.generation === undefined && p.audit.iat > iat) newer.push(`${uid} (synced at iat ${p.audit.iat})`);
  for (const e of entries) {
    const t = tombs.get(e.pod.metadata.uid);
    if (!pods.has(e.pod.metadata.uid) && t && t.generation === undefined && t.iat > iat)
      newer.push(`${e.pod.metadata.uid} (deleted at iat ${t.iat})`);
  }
  if (newer.length)
    throw new StaleGenerationError(
      `this set was signed at iat ${iat}, before per-pod requests that changed ${newer.join(", ")} since the last set: applying it would roll them back. Refused, nothing changed; sign the set again`,
    );
}

/** The tombstones a PUT leaves: one per dropped pod, at the PUT's iat and generation. */
export function setTombstones(
  t: Map<string, Tombstone>,
  dropped: readonly DesiredPod[],
  iat: number,
  generation: number,
  windowSeconds: number,
): void {
  for (const p of dropped) t.set(p.pod.metadata.uid, tombstone(iat, windowSeconds, p, generation));
}
