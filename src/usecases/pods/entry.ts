// The desired-state record of a request's pod: the pod, who signed it (audit), when it was stored, and the
// ConfigMaps and Secrets signed with it (the store keeps Secrets sealed: src/state/sealed-desired-state.ts).
import type { VerifiedToken } from "../../auth/verify.js";
import type { DesiredPod } from "../../pleg/desired-state.js";
import { storedObjects, type PodObjects } from "../../pod/objects.js";
import type { Pod } from "../../pod/schema.js";

/** The desired-state record of a verified token. */
export function desiredEntry(
  pod: Pod,
  token: VerifiedToken,
  now: number,
  objects?: PodObjects,
  generation?: number,
): DesiredPod {
  const p = token.payload;
  const stored = objects && storedObjects(objects);
  return {
    pod,
    audit: {
      iss: String(p.iss),
      kid: token.kid,
      jti: p.jti,
      iat: Number(p.iat),
      ...(generation !== undefined ? { generation } : {}),
    },
    storedAt: now,
    ...(stored ? { objects: stored } : {}),
  };
}
