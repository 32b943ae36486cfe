// metadata.generateName, completed where the API server completes it: an object sent with generateName and no
// name (rest.BeforeCreate → names.SimpleNameGenerator.GenerateName: the base cut to 58 characters, then 5
// characters of "bcdfghjklmnpqrstvwxz2456789"). Upstream draws them at random, so every `kubectl create` makes a
// new object (and `kubectl apply` refuses generateName). A node is given whole files again and again (sync, the
// PUT set), so podsync draws them from the document itself: the same document sent again names the same object
// (no duplicate on a re-apply), and a changed one names a new object, as a new `kubectl create` would
// (docs/workloads.md, "generateName").
import { createHash } from "node:crypto";

const ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789";
/** validation.DNS1123SubdomainMaxLength (63 for the names that label pods) − the 5 random characters. */
const MAX_BASE = 58;

/** The name for `generateName` in a document (its content, without metadata.generateName, picks the suffix). */
export function generatedObjectName(generateName: string, doc: Record<string, unknown>, node: string): string {
  const h = createHash("sha256")
    .update(`${node}\u0000${JSON.stringify(doc)}`)
    .digest();
  let suffix = "";
  for (let i = 0; i < 5; i++) suffix += ALPHANUMS[h[i]! % ALPHANUMS.length];
  return `${generateName.slice(0, MAX_BASE)}${suffix}`;
}

/** Give a document with generateName and no name its name, in place; the name given, or undefined. */
export function completeGenerateName(doc: Record<string, unknown>, node: string): string | undefined {
  const meta = doc["metadata"];
  if (typeof meta !== "object" || meta === null || Array.isArray(meta)) return undefined;
  const m = meta as Record<string, unknown>;
  if (m["name"] !== undefined || typeof m["generateName"] !== "string" || m["generateName"] === "") return undefined;
  const base = m["generateName"];
  delete m["generateName"];
  m["name"] = generatedObjectName(base, doc, node);
  return m["name"] as string;
}
