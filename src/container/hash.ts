// Container hashes. Two of them, for two readers:
// - hashContainer: kubelet's own HashContainer (pkg/kubelet/container/helpers.go, v1.31+), written in kubelet's
//   annotation io.kubernetes.container.hash, so a kubelet that takes over the node sees its own value and keeps
//   podsync's containers running.
// - specHash: podsync's hash over the whole container spec, in podsync's own annotation. There is no API server
//   here to make fields immutable, so any spec change restarts the container (podsync's choice, not kubelet's).
import type { Container } from "../pod/schema.js";
import type { ContainerStatus } from "./types.js";
import { canonicalJSON } from "../util/canonical-json.js";

/** FNV-1a 32 (Go's hash/fnv New32a) over bytes, or a string's UTF-8. */
export function fnv1a32(input: string | Uint8Array): number {
  const bytes = typeof input === "string" ? new TextEncoder().encode(input) : input;
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i]!;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** A string as Go's encoding/json writes it (HTML-safe escaping, as json.Marshal does by default). */
export function goJSONString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === "\\") out += `\\${ch}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (c < 0x20 || ch === "<" || ch === ">" || ch === "&" || c === 0x2028 || c === 0x2029)
      out += `\\u${c.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/** The exact text kubelet feeds FNV-32a: hashutil.DeepHashObject prints its argument with dump.ForHash (spew,
 * `%#v`-less Sprintf form); the argument is json.Marshal(pickFieldsToHash(container)), a []byte, which spew
 * prints as `([]uint8)[b0 b1 ...]` in decimal. json.Marshal sorts map keys: image before name. */
export function kubeletHashInput(container: { name: string; image: string }): string {
  const json = `{"image":${goJSONString(container.image)},"name":${goJSONString(container.name)}}`;
  return `([]uint8)[${new TextEncoder().encode(json).join(" ")}]`;
}

const kubeletCache = new WeakMap<Container, string>();
const specCache = new WeakMap<Container, string>();

/** kubecontainer.HashContainer, as labels.go writes it: strconv.FormatUint(hash, 16). */
export function hashContainer(container: Container): string {
  let h = kubeletCache.get(container);
  if (h === undefined) kubeletCache.set(container, (h = fnv1a32(kubeletHashInput(container)).toString(16)));
  return h;
}

/** podsync's full-spec hash: FNV-1a 32 over the canonical JSON of the whole (defaulted) container. */
export function specHash(container: Container): string {
  let h = specCache.get(container);
  if (h === undefined) specCache.set(container, (h = fnv1a32(canonicalJSON(container)).toString(16)));
  return h;
}

/** containerChanged (kuberuntime_manager.go) plus podsync's own check: kubelet's hash (name, image) differs, or
 * podsync's spec hash differs where the instance carries one (an instance a kubelet made has none). */
export function containerChanged(container: Container, s: Pick<ContainerStatus, "hash" | "specHash">): boolean {
  if (s.hash !== hashContainer(container)) return true;
  return s.specHash !== undefined && s.specHash !== specHash(container);
}
