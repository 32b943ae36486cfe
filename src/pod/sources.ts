// What a pod may take from outside its own containers: ConfigMap, Secret, downward API and projected volume
// sources, and env from ConfigMaps, Secrets and the downward API. Schemas and the API server's static rules
// (validateDownwardAPIVolumeFile, validateObjectFieldSelector, validateContainerResourceFieldSelector,
// validateProjectedVolumeSource, validateLocalNonReservedPath in pkg/apis/core/validation/validation.go).
// Whether the named objects exist is checked against the objects signed with the pod (references.ts).
import { z } from "zod";
import { parseQuantity } from "./quantity.js";

/** The message for what only an API server can give. */
export const NEEDS_API_SERVER_TOKEN = "needs a Kubernetes API server to issue a service account token";

const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;
const key = z
  .string()
  .min(1, "key is required")
  .max(253)
  .regex(CONFIG_KEY, "key must consist of alphanumerics, '-', '_' or '.'");
const objectName = z.string().min(1, "name is required").max(253);
const fileMode = (what: string) =>
  z
    .number()
    .int(`${what} must be an integer`)
    .min(0, `${what} must be between 0 and 0777 (octal)`)
    .max(0o777, `${what} must be between 0 and 0777 (octal)`);

/** Linux's NAME_MAX: the longest file name (one path component), in bytes. */
export const NAME_MAX = 255;
/** The longest item path: PATH_MAX (4096) less room for the volume's directory on the node
 * (<rootDir>/pods/<uid>/volumes/<plugin>/<volume>/<timestamped dir>/, a few hundred bytes). */
export const ITEM_PATH_MAX = 3072;
const utf8Bytes = (s: string) => new TextEncoder().encode(s).byteLength;

/** path.Clean for a relative path without '..' elements (what localPath allows): the file AtomicWriter writes,
 * which cleans each payload path (validatePayload): "./app.conf" is "app.conf", "x/" is "x", "a//b" is "a/b". */
export function cleanItemPath(p: string): string {
  const parts = p.split("/").filter((s) => s !== "" && s !== ".");
  return parts.length ? parts.join("/") : ".";
}

/** validateLocalNonReservedPath: relative, no '..' element, not starting with '..' (the writer's own names).
 * podsync checks the start on the cleaned path too (kubelet checks it as written, so "./..data" would pass and
 * land on the writer's ..data link), and refuses a path that cleans to the volume itself. */
export const localPath = z
  .string()
  .min(1, "path is required")
  .refine((p) => !p.startsWith("/"), "must be a relative path")
  .refine((p) => !p.split("/").includes(".."), "must not contain '..'")
  .refine((p) => !p.startsWith("..") && !cleanItemPath(p).startsWith(".."), "must not start with '..'")
  .refine((p) => cleanItemPath(p) !== ".", "must name a file in the volume, not the volume itself")
  // What the node's filesystem cannot hold: the writer would fail on every sync. podsync's rule, not the API
  // server's (which leaves these to kubelet's write to fail).
  .refine((p) => !p.includes("\u0000"), "must not contain a NUL byte")
  .refine(
    (p) => p.split("/").every((c) => utf8Bytes(c) <= NAME_MAX),
    `each path component must be at most ${NAME_MAX} bytes (the node's file name limit)`,
  )
  .refine(
    (p) => utf8Bytes(p) <= ITEM_PATH_MAX,
    `must be at most ${ITEM_PATH_MAX} bytes (written under the pod's volume directory, within the node's path limit of 4096 bytes)`,
  );

export const KeyToPath = z.strictObject({ key, path: localPath, mode: fileMode("mode").optional() });

export const ObjectFieldSelector = z.strictObject({
  apiVersion: z.literal("v1", { error: 'fieldRef.apiVersion must be "v1"' }).default("v1"),
  fieldPath: z.string().min(1, "fieldPath is required"),
});

export const ResourceFieldSelector = z.strictObject({
  containerName: z.string().optional(),
  resource: z.string().min(1, "resource is required"),
  divisor: z.union([z.string(), z.number()]).optional(),
});

export const ConfigMapKeySelector = z.strictObject({ name: objectName, key, optional: z.boolean().optional() });
export const SecretKeySelector = z.strictObject({ name: objectName, key, optional: z.boolean().optional() });

export const EnvVarSource = z
  .strictObject({
    fieldRef: ObjectFieldSelector.optional(),
    resourceFieldRef: ResourceFieldSelector.optional(),
    configMapKeyRef: ConfigMapKeySelector.optional(),
    secretKeyRef: SecretKeySelector.optional(),
  })
  .superRefine((s, ctx) => {
    const n = [s.fieldRef, s.resourceFieldRef, s.configMapKeyRef, s.secretKeyRef].filter((x) => x !== undefined).length;
    if (n !== 1)
      ctx.addIssue({
        code: "custom",
        message: "must specify exactly one of fieldRef, resourceFieldRef, configMapKeyRef or secretKeyRef",
      });
  });

export const EnvFromSource = z
  .strictObject({
    prefix: z.string().optional(),
    configMapRef: z.strictObject({ name: objectName, optional: z.boolean().optional() }).optional(),
    secretRef: z.strictObject({ name: objectName, optional: z.boolean().optional() }).optional(),
  })
  .superRefine((s, ctx) => {
    if ((s.configMapRef === undefined) === (s.secretRef === undefined))
      ctx.addIssue({ code: "custom", message: "must specify exactly one of configMapRef or secretRef" });
  });

export const ConfigMapVolumeSource = z.strictObject({
  name: objectName,
  items: z.array(KeyToPath).optional(),
  // SetDefaults_ConfigMapVolumeSource: 0644.
  defaultMode: fileMode("defaultMode").default(0o644),
  optional: z.boolean().optional(),
});

export const SecretVolumeSource = z.strictObject({
  secretName: objectName,
  items: z.array(KeyToPath).optional(),
  defaultMode: fileMode("defaultMode").default(0o644),
  optional: z.boolean().optional(),
});

export const DownwardAPIVolumeFile = z
  .strictObject({
    path: localPath,
    fieldRef: ObjectFieldSelector.optional(),
    resourceFieldRef: ResourceFieldSelector.optional(),
    mode: fileMode("mode").optional(),
  })
  .superRefine((f, ctx) => {
    if ((f.fieldRef === undefined) === (f.resourceFieldRef === undefined))
      ctx.addIssue({ code: "custom", message: "must specify exactly one of fieldRef or resourceFieldRef" });
  });

export const DownwardAPIVolumeSource = z.strictObject({
  items: z.array(DownwardAPIVolumeFile).optional(),
  defaultMode: fileMode("defaultMode").default(0o644),
});

const ProjectionItems = { items: z.array(KeyToPath).optional() };

export const VolumeProjection = z
  .strictObject({
    configMap: z.strictObject({ name: objectName, ...ProjectionItems, optional: z.boolean().optional() }).optional(),
    secret: z.strictObject({ name: objectName, ...ProjectionItems, optional: z.boolean().optional() }).optional(),
    downwardAPI: z.strictObject({ items: z.array(DownwardAPIVolumeFile).optional() }).optional(),
    // Accepted by the schema so that the refusal can say why (below), not "unknown field".
    serviceAccountToken: z
      .strictObject({
        audience: z.string().optional(),
        expirationSeconds: z.number().int().optional(),
        path: z.string(),
      })
      .optional(),
  })
  .superRefine((p, ctx) => {
    const n = [p.configMap, p.secret, p.downwardAPI, p.serviceAccountToken].filter((x) => x !== undefined).length;
    if (n !== 1)
      ctx.addIssue({
        code: "custom",
        message: "must specify exactly one of configMap, secret, downwardAPI or serviceAccountToken",
      });
    if (p.serviceAccountToken)
      ctx.addIssue({ code: "custom", path: ["serviceAccountToken"], message: NEEDS_API_SERVER_TOKEN });
  });

export const ProjectedVolumeSource = z.strictObject({
  sources: z.array(VolumeProjection),
  defaultMode: fileMode("defaultMode").default(0o644),
});

export type KeyToPath = z.output<typeof KeyToPath>;
export type EnvVarSource = z.output<typeof EnvVarSource>;
export type EnvFromSource = z.output<typeof EnvFromSource>;
export type ObjectFieldSelector = z.output<typeof ObjectFieldSelector>;
export type ResourceFieldSelector = z.output<typeof ResourceFieldSelector>;
export type DownwardAPIVolumeFile = z.output<typeof DownwardAPIVolumeFile>;
export type VolumeProjection = z.output<typeof VolumeProjection>;

// validEnvDownwardAPIFieldPathExpressions / validVolumeDownwardAPIFieldPathExpressions, and the subscripted
// forms ConvertDownwardAPIFieldLabel allows (metadata.labels['k'], metadata.annotations['k']).
export const ENV_FIELD_PATHS = new Set([
  "metadata.name",
  "metadata.namespace",
  "metadata.uid",
  "spec.nodeName",
  "spec.serviceAccountName",
  "status.hostIP",
  "status.hostIPs",
  "status.podIP",
  "status.podIPs",
]);
export const VOLUME_FIELD_PATHS = new Set([
  "metadata.name",
  "metadata.namespace",
  "metadata.uid",
  "metadata.labels",
  "metadata.annotations",
]);

/** fieldpath.SplitMaybeSubscriptedPath: `metadata.labels['k']` → ["metadata.labels", "k"]. */
export function splitSubscript(fieldPath: string): [string, string] | undefined {
  if (!fieldPath.endsWith("']")) return undefined;
  const open = fieldPath.indexOf("['");
  if (open < 0) return undefined;
  return [fieldPath.slice(0, open), fieldPath.slice(open + 2, -2)];
}

function fieldPathIssue(fieldPath: string, allowed: Set<string>): string | undefined {
  const sub = splitSubscript(fieldPath);
  if (sub) {
    if (sub[0] !== "metadata.labels" && sub[0] !== "metadata.annotations")
      return `field label does not support subscript: ${sub[0]}`;
    if (sub[1].length === 0) return "the subscript (a label or annotation key) must not be empty";
    return undefined;
  }
  if (allowed.has(fieldPath)) return undefined;
  return `unsupported fieldPath "${fieldPath}"; supported: ${[...allowed, "metadata.labels['<KEY>']", "metadata.annotations['<KEY>']"].join(", ")}`;
}

// validContainerResourceFieldPathExpressions, less what podsync does not model (ephemeral-storage, hugepages:
// their schema fields are refused, so their downward value would be invented).
export const RESOURCE_FIELDS = new Set(["limits.cpu", "limits.memory", "requests.cpu", "requests.memory"]);
// validateContainerResourceDivisor
const CPU_DIVISORS = new Set([1, 0.001]);
const MEMORY_DIVISORS = new Set(
  ["1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"].map((d) => parseQuantity(d)!),
);

type Path = (string | number)[];
interface Issue {
  path: Path;
  message: string;
}

function resourceIssues(ref: ResourceFieldSelector, containers: Set<string>, needName: boolean, at: Path): Issue[] {
  const out: Issue[] = [];
  if (needName && !ref.containerName)
    out.push({ path: [...at, "containerName"], message: "containerName is required in a downwardAPI volume" });
  if (ref.containerName && !containers.has(ref.containerName))
    out.push({ path: [...at, "containerName"], message: `container "${ref.containerName}" is not in this pod` });
  if (!RESOURCE_FIELDS.has(ref.resource)) {
    out.push({
      path: [...at, "resource"],
      message: `unsupported resource "${ref.resource}"; supported: ${[...RESOURCE_FIELDS].join(", ")}`,
    });
    return out;
  }
  if (ref.divisor !== undefined) {
    const d = parseQuantity(ref.divisor);
    const cpu = ref.resource.endsWith(".cpu");
    if (d === undefined || !(cpu ? CPU_DIVISORS : MEMORY_DIVISORS).has(d))
      out.push({
        path: [...at, "divisor"],
        message: cpu
          ? "cpu divisor must be 1m or 1"
          : "memory divisor must be one of 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei",
      });
  }
  return out;
}

function downwardFileIssues(files: DownwardAPIVolumeFile[] | undefined, containers: Set<string>, at: Path): Issue[] {
  const out: Issue[] = [];
  (files ?? []).forEach((f, k) => {
    if (f.fieldRef) {
      const bad = fieldPathIssue(f.fieldRef.fieldPath, VOLUME_FIELD_PATHS);
      if (bad) out.push({ path: [...at, k, "fieldRef", "fieldPath"], message: bad });
    }
    if (f.resourceFieldRef)
      out.push(...resourceIssues(f.resourceFieldRef, containers, true, [...at, k, "resourceFieldRef"]));
  });
  return out;
}

interface SourcesContainer {
  name: string;
  env?: { name: string; value: string; valueFrom?: EnvVarSource | undefined }[] | undefined;
  envFrom?: EnvFromSource[] | undefined;
}

/** IsEnvVarName, which validateEnvFrom holds a prefix to. */
const ENV_VAR_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

/** The shapes sources.ts adds to a pod, as far as the rules below need them. */
interface SourcesPod {
  spec: {
    initContainers?: SourcesContainer[] | undefined;
    containers: SourcesContainer[];
    volumes?:
      | ({ name: string } & Partial<Record<"downwardAPI", { items?: DownwardAPIVolumeFile[] | undefined }>> &
          Partial<Record<"projected", { sources: VolumeProjection[] }>> &
          Partial<Record<"configMap" | "secret", { items?: KeyToPath[] | undefined }>>)[]
      | undefined;
  };
}

/** The static rules on a pod's sources, as (path under the pod, message). */
export function sourceIssues(pod: SourcesPod): Issue[] {
  const out: Issue[] = [];
  const containers = new Set([...(pod.spec.initContainers ?? []), ...pod.spec.containers].map((c) => c.name));
  for (const kind of ["initContainers", "containers"] as const)
    (pod.spec[kind] ?? []).forEach((c, i) => {
      (c.envFrom ?? []).forEach((f, j) => {
        if (f.prefix && !ENV_VAR_NAME.test(f.prefix))
          out.push({
            path: ["spec", kind, i, "envFrom", j, "prefix"],
            message:
              "must be a valid environment variable name prefix: alphabetic characters, digits, '_', '-' or '.', not starting with a digit",
          });
      });
      (c.env ?? []).forEach((e, j) => {
        const at: Path = ["spec", kind, i, "env", j];
        if (e.valueFrom === undefined) return;
        if (e.value !== "")
          out.push({ path: [...at, "valueFrom"], message: "may not be specified when `value` is not empty" });
        const f = e.valueFrom;
        if (f.fieldRef) {
          const bad = fieldPathIssue(f.fieldRef.fieldPath, ENV_FIELD_PATHS);
          if (bad) out.push({ path: [...at, "valueFrom", "fieldRef", "fieldPath"], message: bad });
          else if (f.fieldRef.fieldPath === "metadata.labels" || f.fieldRef.fieldPath === "metadata.annotations")
            out.push({
              path: [...at, "valueFrom", "fieldRef", "fieldPath"],
              message: "env takes one label or annotation: metadata.labels['<KEY>']",
            });
        }
        if (f.resourceFieldRef)
          out.push(...resourceIssues(f.resourceFieldRef, containers, false, [...at, "valueFrom", "resourceFieldRef"]));
      });
    });
  (pod.spec.volumes ?? []).forEach((v, i) => {
    const files = volumeFiles(out, ["spec", "volumes", i]);
    if (v.downwardAPI)
      out.push(...downwardFileIssues(v.downwardAPI.items, containers, ["spec", "volumes", i, "downwardAPI", "items"]));
    if (v.downwardAPI) files(v.downwardAPI.items, ["downwardAPI"]);
    if (v.configMap) files(v.configMap.items, ["configMap"]);
    if (v.secret) files(v.secret.items, ["secret"]);
    if (v.projected)
      // validateProjectedVolumeSource: no two sources may write the same path.
      v.projected.sources.forEach((s, k) => {
        const at: Path = ["projected", "sources", k];
        if (s.downwardAPI)
          out.push(
            ...downwardFileIssues(s.downwardAPI.items, containers, [
              "spec",
              "volumes",
              i,
              ...at,
              "downwardAPI",
              "items",
            ]),
          );
        if (s.configMap) files(s.configMap.items, [...at, "configMap"]);
        if (s.secret) files(s.secret.items, [...at, "secret"]);
        if (s.downwardAPI) files(s.downwardAPI.items, [...at, "downwardAPI"]);
      });
  });
  return out;
}

const fmtPath = (path: Path) =>
  path.reduce<string>((acc, k) => (typeof k === "number" ? `${acc}[${k}]` : acc ? `${acc}.${k}` : k), "");

/** One volume's item paths, cleaned as the writer cleans them: two items may not name the same file, and no
 * file may also be a directory of another ("a" and "a/b"). kubelet lets a later item overwrite an earlier one
 * within a source and fails the write on a file/directory clash; podsync refuses both before any runtime call. */
function volumeFiles(out: Issue[], volume: Path) {
  const files = new Map<string, string>(); // cleaned path → the field that names it
  const dirs = new Map<string, string>(); // a directory some item needs → that item's field
  return (items: { path: string }[] | undefined, at: Path) =>
    (items ?? []).forEach((it, k) => {
      const path = cleanItemPath(it.path);
      const field = fmtPath([...at, "items", k, "path"]);
      const parts = path.split("/");
      const parents = parts.slice(0, -1).map((_, n) => parts.slice(0, n + 1).join("/"));
      const clash = files.get(path) ?? dirs.get(path) ?? parents.map((d) => files.get(d)).find((x) => x !== undefined);
      if (clash !== undefined) {
        out.push({
          path: [...volume, ...at, "items", k, "path"],
          message: `path "${path}" conflicts with ${clash} (the same file once cleaned, or a file where the other needs a directory)`,
        });
        return;
      }
      files.set(path, field);
      for (const d of parents) if (!dirs.has(d)) dirs.set(d, field);
    });
}
