// Reading pod files: one pod with its ConfigMaps and Secrets (sync, plan, sign), or a node's whole set (apply).
import { readFileSync } from "node:fs";
import { fail } from "./args.js";

/** The pod file as the signed payload's claims: `pod` (at most one), the ConfigMaps and Secrets that came with it,
 * and every other object as `items` (workloads, claims; kinds the node skips it says so) — a YAML stream or a v1
 * List, as `podman kube play` reads them. The node validates it all. */
export async function readPod(
  path: string,
): Promise<{ pod?: unknown; items?: unknown[]; configMaps?: unknown[]; secrets?: unknown[] }> {
  const text = readText(path);
  const yaml = path.endsWith(".json") ? undefined : await import("yaml");
  let docs: unknown[];
  try {
    docs = yaml
      ? [yaml.parseAllDocuments(text)].flat().map((d) => {
          if (d.errors[0]) throw d.errors[0];
          return d.toJS() as unknown;
        })
      : [JSON.parse(text)];
  } catch (e) {
    return fail(`${path}: ${(e as Error).message}`);
  }
  const kindOf = (d: unknown) => (typeof d === "object" && d !== null ? (d as { kind?: unknown }).kind : undefined);
  const all = docs.flatMap((d) =>
    kindOf(d) === "List" ? ((d as { items?: unknown[] }).items ?? []) : d === null ? [] : [d],
  );
  requireKinds(path, all);
  const pods = all.filter((d) => kindOf(d) === "Pod" || kindOf(d) === undefined);
  if (pods.length > 1)
    fail(
      `${path} holds ${pods.length} pods; sync takes one. To make several pods the node's set, use podsync apply -f ${path}`,
    );
  const configMaps = all.filter((d) => kindOf(d) === "ConfigMap");
  const secrets = all.filter((d) => kindOf(d) === "Secret");
  const items = all.filter((d) => !["Pod", "ConfigMap", "Secret", undefined].includes(kindOf(d) as string));
  if (pods.length === 0 && items.length === 0)
    fail(
      `${path} holds no Pod and no workload to run${all.length ? `, only ${all.map((d) => `${String(kindOf(d))} "${String((d as { metadata?: { name?: unknown } }).metadata?.name ?? "")}"`).join(", ")}: ConfigMaps and Secrets are sent with the pods that use them` : " (it is empty)"}`,
    );
  return {
    ...(pods.length ? { pod: pods[0] } : {}),
    ...(items.length ? { items } : {}),
    ...(configMaps.length ? { configMaps } : {}),
    ...(secrets.length ? { secrets } : {}),
  };
}

/** As the node reads a body: only a file that is one pod may leave out kind; in a file of several objects each
 * names its kind (src/pod/workloads/intake.ts). Said here, before signing, with the document's place. */
function requireKinds(path: string, objs: unknown[]): void {
  if (objs.length < 2) return;
  const i = objs.findIndex((d) => typeof d === "object" && d !== null && (d as { kind?: unknown }).kind === undefined);
  if (i >= 0)
    fail(
      `${path}: object ${i + 1} of ${objs.length} has no kind: in a file of several objects each names its kind (Pod, Deployment, ConfigMap, ...) and apiVersion; only a file that is one pod may leave them out`,
    );
}

/** A file's text ("-": stdin); a file that cannot be read is an error naming it. */
export function readText(path: string): string {
  return readBytes(path).toString("utf8");
}

export function readBytes(path: string): Buffer<ArrayBuffer> {
  try {
    return (path === "-" ? readFileSync(0) : readFileSync(path)) as Buffer<ArrayBuffer>;
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    return fail(
      `cannot read ${path}: ${err.code === "ENOENT" ? "no such file" : err.code === "EISDIR" ? "it is a directory" : err.message}`,
    );
  }
}

/** The pods of a node file: YAML documents (empty ones skipped) or one v1.List; JSON: a v1.List or one pod. */
export async function readPods(path: string, text: string, json: boolean): Promise<unknown[]> {
  let docs: unknown[];
  try {
    docs = json
      ? [JSON.parse(text)]
      : (await import("yaml")).parseAllDocuments(text).map((d) => {
          if (d.errors[0]) throw d.errors[0];
          return d.toJS();
        });
  } catch (e) {
    return fail(`${path}: ${(e as Error).message}`);
  }
  docs = docs.filter((d) => d !== null && d !== undefined);
  const first = docs[0] as { kind?: unknown; items?: unknown } | undefined;
  if (docs.length === 1 && first?.kind === "List") {
    if (!Array.isArray(first.items)) fail(`${path}: a v1.List needs "items"`);
    requireKinds(path, first.items as unknown[]);
    return first.items as unknown[];
  }
  requireKinds(path, docs);
  return docs;
}
