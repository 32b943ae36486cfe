// A uid for a pod (or workload) sent without metadata.uid: a name-based UUID (RFC 9562 version 5: SHA-1 over a
// namespace UUID and a name), the name being `<node>/<namespace>/<name>`. The same node, namespace and name
// always give the same uid, so re-sending a uid-less manifest converges (and a changed spec updates the pod in
// place) instead of making a second pod; two nodes never share one. The namespace UUID is RFC 9562's URL
// namespace (6ba7b811-9dad-11d1-80b4-00c04fd430c8) and the name is prefixed `podsync:`, so anyone can recompute it:
//   uuidv5(URL, "podsync:" + node + "/" + namespace + "/" + name)
import { createHash } from "node:crypto";

const URL_NAMESPACE = "6ba7b8119dad11d180b400c04fd430c8";

/** RFC 9562 UUIDv5 of `name` in `namespaceHex` (32 hex digits). */
export function uuidv5(namespaceHex: string, name: string): string {
  const h = createHash("sha1").update(Buffer.from(namespaceHex, "hex")).update(name, "utf8").digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

/** The uid podsync gives `namespace/name` on `node` when none is sent (also a derived pod's uid). */
export function derivedUid(node: string, namespace: string, name: string): string {
  return uuidv5(URL_NAMESPACE, `podsync:${node}/${namespace}/${name}`);
}
