// What a cluster adds to an object that a node has no use for, removed before validation with a warning each, so
// a `kubectl get -o yaml` export runs as it is:
//   - the `kube-api-access-<5 chars>` projected volume the ServiceAccount admission plugin injects (a token, the
//     cluster's CA and the namespace) and every mount of it: there is no API server here to issue the token;
//   - `serviceAccountName`/`serviceAccount: default` (the admission plugin's default: nothing to run as);
//   - a named service account whose token would be mounted: the pod runs without the token
//     (automountServiceAccountToken: false) unless the node owner set PODSYNC_SERVICE_ACCOUNT_TOKENS=refuse, when
//     it is refused as before (the pod schema names the field);
//   - the API server's read-only metadata (resourceVersion, managedFields, ownerReferences, ...) and `status`.
// Everything else is validated as sent. The input is not changed: a cleaned copy is returned.

import { READ_ONLY_METADATA } from "../schema.js";

export type ServiceAccountTokens = "drop" | "refuse";
export const SERVICE_ACCOUNT_TOKEN_MODES = ["drop", "refuse"] as const;

const KUBE_API_ACCESS = /^kube-api-access-[a-z0-9]{5}$/;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The API server's injected token volume: that name, projected, with a serviceAccountToken source. */
function isInjectedTokenVolume(v: unknown): boolean {
  if (!isObject(v) || typeof v["name"] !== "string" || !KUBE_API_ACCESS.test(v["name"])) return false;
  const sources = isObject(v["projected"]) ? v["projected"]["sources"] : undefined;
  return Array.isArray(sources) && sources.some((s) => isObject(s) && s["serviceAccountToken"] !== undefined);
}

/** Clean a pod spec (a Pod's, or a template's) in place; `at` is its path (`spec`, `spec.template.spec`). */
export function cleanPodSpec(
  spec: Record<string, unknown>,
  at: string,
  tokens: ServiceAccountTokens,
  warn: (w: string) => void,
): void {
  const volumes = Array.isArray(spec["volumes"]) ? (spec["volumes"] as unknown[]) : [];
  const dropped = new Set(volumes.filter(isInjectedTokenVolume).map((v) => (v as { name: string }).name));
  if (dropped.size) {
    spec["volumes"] = volumes.filter((v) => !isInjectedTokenVolume(v));
    let mounts = 0;
    for (const kind of ["initContainers", "containers", "ephemeralContainers"])
      for (const c of Array.isArray(spec[kind]) ? (spec[kind] as unknown[]) : []) {
        if (!isObject(c) || !Array.isArray(c["volumeMounts"])) continue;
        const before = c["volumeMounts"].length;
        c["volumeMounts"] = c["volumeMounts"].filter(
          (m) => !(isObject(m) && typeof m["name"] === "string" && dropped.has(m["name"])),
        );
        mounts += before - (c["volumeMounts"] as unknown[]).length;
      }
    warn(
      `${at}.volumes: dropped ${[...dropped].join(", ")} (the API server's service account token volume) and its ${mounts} mount(s): there is no API server on this node to issue the token`,
    );
  }
  for (const f of ["serviceAccountName", "serviceAccount"])
    if (spec[f] === "default") {
      delete spec[f];
      warn(`${at}.${f}: "default" dropped (the namespace's default service account; the pod runs without one)`);
    }
  const named =
    typeof spec["serviceAccountName"] === "string"
      ? spec["serviceAccountName"]
      : typeof spec["serviceAccount"] === "string"
        ? spec["serviceAccount"]
        : undefined;
  if (named !== undefined && spec["automountServiceAccountToken"] !== false && tokens === "drop") {
    spec["automountServiceAccountToken"] = false;
    warn(
      `${at}.serviceAccountName: "${named}" runs without a service account token (there is no API server on this node to issue one); the node owner can refuse such pods instead (PODSYNC_SERVICE_ACCOUNT_TOKENS=refuse)`,
    );
  }
}

/** Drop the read-only metadata fields (and `status`) of an object in place, with one warning naming them. */
export function cleanReadOnly(
  obj: Record<string, unknown>,
  at: string,
  warn: (w: string) => void,
  keep: readonly string[] = [],
): void {
  const gone: string[] = [];
  const meta = obj["metadata"];
  if (isObject(meta))
    for (const k of READ_ONLY_METADATA)
      if (meta[k] !== undefined && !keep.includes(k)) {
        // `creationTimestamp: null` is what kubectl writes into every generated manifest: nothing to drop.
        if (!(k === "creationTimestamp" && meta[k] === null)) gone.push(`metadata.${k}`);
        delete meta[k];
      }
  if (obj["status"] !== undefined) {
    if (isObject(obj["status"]) && Object.keys(obj["status"]).length === 0) delete obj["status"];
    else {
      gone.push("status");
      delete obj["status"];
    }
  }
  if (gone.length)
    warn(
      `${at ? `${at}: ` : ""}read-only field(s) ignored: ${gone.join(", ")} (set by a cluster's API server and controllers)`,
    );
}

const prefix = (at: string, f: string) => (at ? `${at}.${f}` : f);

/** A cleaned copy of a Pod document, and its warnings. */
export function cleanPod(
  doc: Record<string, unknown>,
  at: string,
  tokens: ServiceAccountTokens,
): { doc: Record<string, unknown>; warnings: string[] } {
  const warnings: string[] = [];
  const copy = structuredClone(doc);
  cleanReadOnly(copy, at, (w) => warnings.push(w));
  if (isObject(copy["spec"])) cleanPodSpec(copy["spec"], prefix(at, "spec"), tokens, (w) => warnings.push(w));
  return { doc: copy, warnings };
}

/** A cleaned copy of a workload document (its own metadata and status, and its pod template), and its warnings. */
export function cleanWorkload(
  doc: Record<string, unknown>,
  at: string,
  tokens: ServiceAccountTokens,
): { doc: Record<string, unknown>; warnings: string[] } {
  const warnings: string[] = [];
  const warn = (w: string) => warnings.push(w);
  const copy = structuredClone(doc);
  cleanReadOnly(copy, at, warn);
  const spec = copy["spec"];
  if (!isObject(spec)) return { doc: copy, warnings };
  const templates: [Record<string, unknown>, string][] = [];
  if (isObject(spec["template"])) templates.push([spec["template"], prefix(at, "spec.template")]);
  const jt = spec["jobTemplate"];
  if (isObject(jt)) {
    cleanReadOnly(jt, prefix(at, "spec.jobTemplate"), warn);
    if (isObject(jt["spec"]) && isObject(jt["spec"]["template"]))
      templates.push([jt["spec"]["template"], prefix(at, "spec.jobTemplate.spec.template")]);
  }
  for (const [t, tat] of templates) {
    cleanReadOnly(t, tat, warn);
    if (isObject(t["spec"])) cleanPodSpec(t["spec"], `${tat}.spec`, tokens, warn);
  }
  if (Array.isArray(spec["volumeClaimTemplates"]))
    spec["volumeClaimTemplates"].forEach(
      (c, i) => isObject(c) && cleanReadOnly(c, prefix(at, `spec.volumeClaimTemplates[${i}]`), warn),
    );
  return { doc: copy, warnings };
}
