// kube-controller-manager's ComputeHash (pkg/controller/controller_utils.go): FNV-1a 32 over the pod template,
// then, when there is a collision count, its 8 little-endian bytes; the sum's decimal digits mapped by
// SafeEncodeString. The same pipeline and the same alphabet as upstream. One deliberate difference: upstream
// feeds the hasher a spew dump of the Go struct (dump.ForHash), which a TypeScript port cannot reproduce; podsync
// feeds it the template's canonical JSON (sorted keys). So `pod-template-hash` has upstream's shape and
// behaviour (stable for a template, changed by any template change or collision count) but not a cluster's value
// for the same template.
import { fnv1a32 } from "../container/hash.js";
import { canonicalJSON } from "../util/canonical-json.js";
import { safeEncodeString } from "./pods.js";

export function computeHash(template: unknown, collisionCount?: number): string {
  const body = new TextEncoder().encode(canonicalJSON(template));
  let bytes = body;
  if (collisionCount !== undefined) {
    bytes = new Uint8Array(body.length + 8);
    bytes.set(body);
    new DataView(bytes.buffer).setUint32(body.length, collisionCount >>> 0, true);
  }
  return safeEncodeString(String(fnv1a32(bytes)));
}
