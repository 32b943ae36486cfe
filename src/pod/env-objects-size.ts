// The $(VAR) expansion bound (env-size.ts) again, once the pod's ConfigMaps and Secrets are known: envFrom and
// valueFrom values count at their real length. The spec alone (schema.ts) cannot see them, so a 1 MiB key
// referenced 500 times as "$(B)" would pass it and expand to 500 MB at container start; a single key over
// MAX_ARG_STRLEN would fail the start with E2BIG. Both are refused here, naming the field, before any runtime
// call. Lengths mirror env-sources.ts (the engine's resolver) step for step; podsync's own bound, not kubelet's.
import type { FieldError } from "./validate.js";
import type { Container, Pod } from "./schema.js";
import type { PodObjects } from "./objects.js";
import { expansionIssues, utf8Length, type EnvSourceLengths } from "./env-size.js";
import { splitSubscript } from "./sources.js";

/** A downward-API value not known before the sandbox runs (node name, IPs, a resource quantity): at most a
 * DNS-1123 subdomain, far above any IP list or decimal quantity. */
const RUNTIME_VALUE_BOUND = 253;

/** fieldpath.FormatMap's length at most: `key="value"` lines, each value byte quoted as up to 4 characters. */
const formattedMapBound = (m: Record<string, string> | undefined) =>
  Object.entries(m ?? {}).reduce((n, [k, v]) => n + utf8Length(k) + 4 + 4 * utf8Length(v), 0);

const secretLength = (b: Uint8Array) => utf8Length(new TextDecoder().decode(b));

export function objectEnvLengths(pod: Pod, objects: PodObjects): EnvSourceLengths {
  const cms = new Map(objects.configMaps.map((c) => [c.metadata.name, c]));
  const secrets = new Map(objects.secrets.map((s) => [s.metadata.name, s]));
  const meta = pod.metadata;
  return {
    from(f) {
      const prefix = f.prefix ?? "";
      if (f.configMapRef)
        return Object.entries(cms.get(f.configMapRef.name)?.data ?? {}).map(([k, v]) => [prefix + k, utf8Length(v)]);
      const s = f.secretRef ? secrets.get(f.secretRef.name) : undefined;
      return Object.entries(s?.data ?? {}).map(([k, v]) => [prefix + k, secretLength(v)]);
    },
    value(src) {
      if (src.configMapKeyRef) {
        const data = cms.get(src.configMapKeyRef.name)?.data;
        return data && Object.hasOwn(data, src.configMapKeyRef.key)
          ? utf8Length(data[src.configMapKeyRef.key]!)
          : undefined;
      }
      if (src.secretKeyRef) {
        const data = secrets.get(src.secretKeyRef.name)?.data;
        return data && Object.hasOwn(data, src.secretKeyRef.key)
          ? secretLength(data[src.secretKeyRef.key]!)
          : undefined;
      }
      if (src.fieldRef) {
        const path = src.fieldRef.fieldPath;
        const sub = splitSubscript(path);
        if (sub) return utf8Length((sub[0] === "metadata.labels" ? meta.labels : meta.annotations)?.[sub[1]] ?? "");
        if (path === "metadata.name") return utf8Length(meta.name);
        if (path === "metadata.namespace") return utf8Length(meta.namespace);
        if (path === "metadata.uid") return utf8Length(meta.uid);
        if (path === "metadata.labels") return formattedMapBound(meta.labels);
        if (path === "metadata.annotations") return formattedMapBound(meta.annotations);
      }
      return RUNTIME_VALUE_BOUND;
    },
  };
}

const usesSources = (c: Container) =>
  (c.envFrom?.length ?? 0) > 0 || (c.env ?? []).some((e) => e.valueFrom !== undefined);

/** Every container whose env, with the objects' values, expands past the bound; paths start with `prefix`. */
export function objectExpansionErrors(pod: Pod, objects: PodObjects, prefix = ""): FieldError[] {
  const out: FieldError[] = [];
  const lengths = objectEnvLengths(pod, objects);
  for (const kind of ["initContainers", "containers"] as const)
    (pod.spec[kind] ?? []).forEach((c, i) => {
      if (!usesSources(c)) return; // the spec alone was bounded by the schema
      for (const issue of expansionIssues(c, lengths)) {
        const path = ["spec", kind, i, ...issue.path].reduce<string>(
          (acc, k) => (typeof k === "number" ? `${acc}[${k}]` : acc ? `${acc}.${k}` : k),
          prefix,
        );
        out.push({ path, message: issue.message });
      }
    });
  return out;
}
