// A pod's references to ConfigMaps and Secrets, checked against the objects signed with it. A required object or
// key that is missing does not refuse the pod: on a cluster the API server takes it and kubelet keeps the
// container waiting (CreateContainerConfigError: `secret "x" not found`, kubelet_pods.go makeEnvironmentVariables;
// a volume's FailedMount) until the object arrives. So it is a warning here (missingReferences), the runtime says
// the rest (src/container/env-sources.ts, src/volumemanager/object-volumes.ts), and the pod starts once a later
// sync brings the object. `optional: true` references may be missing, as in kubelet. A pull secret that is not
// there is still an error. Messages name objects and keys, never values.
import type { FieldError } from "./validate.js";
import type { Pod, PullSecret } from "./schema.js";
import { configMapKeys, SECRET_TYPES, type ConfigMap, type PodObjects, type Secret } from "./objects.js";
import type { KeyToPath } from "./sources.js";

type Path = (string | number)[];

const fmt = (prefix: string, path: Path) =>
  path.reduce<string>((acc, k) => (typeof k === "number" ? `${acc}[${k}]` : acc ? `${acc}.${k}` : k), prefix);

/** The references that cannot be resolved and keep the pod waiting (not errors), as warnings naming the field. */
export function missingReferences(pod: Pod, objects: PodObjects, prefix = ""): string[] {
  return unresolved(pod, objects, prefix).missing.map(
    (e) => `${e.path}: ${e.message}; the container waits (CreateContainerConfigError) until a sync brings it`,
  );
}

/** Every reference that is an error (a pull secret not sent or of the wrong type), with the path of its field. */
export function referenceErrors(pod: Pod, objects: PodObjects, prefix = ""): FieldError[] {
  return unresolved(pod, objects, prefix).errors;
}

function unresolved(pod: Pod, objects: PodObjects, prefix: string): { errors: FieldError[]; missing: FieldError[] } {
  const out: FieldError[] = [];
  const missing: FieldError[] = [];
  const secrets = new Map(objects.secrets.map((s) => [s.metadata.name, s]));
  const err = (path: Path, message: string) => out.push({ path: fmt(prefix, path), message });
  const wait = (path: Path, message: string) => missing.push({ path: fmt(prefix, path), message });
  const check = referenceCheck(objects, wait);
  containerReferences(pod, check);
  volumeReferences(pod, check);
  pullSecretReferences(pod, secrets, err);
  return { errors: out, missing };
}

/** A ConfigMap/Secret reference's check: the object must be there unless optional, and so must each key. */
type Check = (
  kind: "ConfigMap" | "Secret",
  name: string,
  optional: boolean | undefined,
  at: Path,
  nameField: string,
  keys?: { key: string; at: Path }[],
  env?: boolean,
) => void;

function referenceCheck(objects: PodObjects, wait: (path: Path, message: string) => void): Check {
  const cms = new Map(objects.configMaps.map((c) => [c.metadata.name, c]));
  const secrets = new Map(objects.secrets.map((s) => [s.metadata.name, s]));
  // Env reads a ConfigMap's data only (kubelet's makeEnvironmentVariables); a volume its binaryData too.
  const hasKey = (o: ConfigMap | Secret, key: string, env: boolean) =>
    "type" in o
      ? Object.hasOwn(o.data, key)
      : env
        ? o.data !== undefined && Object.hasOwn(o.data, key)
        : configMapKeys(o).includes(key);
  const missingObject = (kind: "ConfigMap" | "Secret", name: string) => `${kind} "${name}" is not in the signed body`;
  const missingKey = (kind: "ConfigMap" | "Secret", name: string, key: string) =>
    `${kind} "${name}" has no key "${key}"`;

  /** A ConfigMap/Secret reference: the object must be there unless optional, and so must each key. */
  return (
    kind: "ConfigMap" | "Secret",
    name: string,
    optional: boolean | undefined,
    at: Path,
    nameField: string,
    keys: { key: string; at: Path }[] = [],
    env = false,
  ) => {
    const o = kind === "ConfigMap" ? cms.get(name) : secrets.get(name);
    if (!o) {
      if (!optional) wait([...at, nameField], missingObject(kind, name));
      return;
    }
    for (const k of keys) if (!hasKey(o, k.key, env) && !optional) wait(k.at, missingKey(kind, name, k.key));
  };
}

const itemKeys = (items: KeyToPath[] | undefined, at: Path) =>
  (items ?? []).map((it, k) => ({ key: it.key, at: [...at, "items", k, "key"] }));

/** The containers' env and envFrom references. */
function containerReferences(pod: Pod, check: Check): void {
  for (const kind of ["initContainers", "containers"] as const)
    (pod.spec[kind] ?? []).forEach((c, i) => {
      const base: Path = ["spec", kind, i];
      (c.env ?? []).forEach((e, j) => {
        const at: Path = [...base, "env", j, "valueFrom"];
        const cm = e.valueFrom?.configMapKeyRef;
        if (cm)
          check(
            "ConfigMap",
            cm.name,
            cm.optional,
            [...at, "configMapKeyRef"],
            "name",
            [{ key: cm.key, at: [...at, "configMapKeyRef", "key"] }],
            true,
          );
        const s = e.valueFrom?.secretKeyRef;
        if (s)
          check("Secret", s.name, s.optional, [...at, "secretKeyRef"], "name", [
            { key: s.key, at: [...at, "secretKeyRef", "key"] },
          ]);
      });
      (c.envFrom ?? []).forEach((f, j) => {
        const at: Path = [...base, "envFrom", j];
        if (f.configMapRef)
          check("ConfigMap", f.configMapRef.name, f.configMapRef.optional, [...at, "configMapRef"], "name");
        if (f.secretRef) check("Secret", f.secretRef.name, f.secretRef.optional, [...at, "secretRef"], "name");
      });
    });
}

/** The configMap, secret and projected volumes' references. */
function volumeReferences(pod: Pod, check: Check): void {
  (pod.spec.volumes ?? []).forEach((v, i) => {
    const at: Path = ["spec", "volumes", i];
    if ("configMap" in v)
      check(
        "ConfigMap",
        v.configMap.name,
        v.configMap.optional,
        [...at, "configMap"],
        "name",
        itemKeys(v.configMap.items, [...at, "configMap"]),
      );
    if ("secret" in v)
      check(
        "Secret",
        v.secret.secretName,
        v.secret.optional,
        [...at, "secret"],
        "secretName",
        itemKeys(v.secret.items, [...at, "secret"]),
      );
    if ("projected" in v)
      v.projected.sources.forEach((s, k) => {
        const sat: Path = [...at, "projected", "sources", k];
        if (s.configMap)
          check(
            "ConfigMap",
            s.configMap.name,
            s.configMap.optional,
            [...sat, "configMap"],
            "name",
            itemKeys(s.configMap.items, [...sat, "configMap"]),
          );
        if (s.secret)
          check(
            "Secret",
            s.secret.name,
            s.secret.optional,
            [...sat, "secret"],
            "name",
            itemKeys(s.secret.items, [...sat, "secret"]),
          );
      });
  });
}

/** The pull secrets named, which must be sent with the pod and be of a pull secret's type (an error, not a wait). */
function pullSecretReferences(
  pod: Pod,
  secrets: ReadonlyMap<string, Secret>,
  err: (path: Path, message: string) => void,
) {
  (pod.spec.imagePullSecrets ?? []).forEach((ps, i) => {
    if (ps.auths || !ps.name) return;
    const s = secrets.get(ps.name);
    if (!s)
      err(
        ["spec", "imagePullSecrets", i, "name"],
        `Secret "${ps.name}" is not in the signed body (send it with the pod, or give the credentials inline)`,
      );
    else if (s.type !== SECRET_TYPES.dockerConfigJson && s.type !== SECRET_TYPES.dockerCfg)
      err(
        ["spec", "imagePullSecrets", i, "name"],
        `Secret "${ps.name}" is of type "${s.type}"; a pull secret must be of type ${SECRET_TYPES.dockerConfigJson}`,
      );
  });
}

/** The objects' own consistency: unique names, and the pod's namespace (a pod sees only its namespace's objects). */
export function objectErrors(
  objects: PodObjects,
  namespace: string,
  where: { configMaps: (i: number) => string; secrets: (i: number) => string },
): FieldError[] {
  const out: FieldError[] = [];
  for (const kind of ["configMaps", "secrets"] as const) {
    const seen = new Set<string>();
    objects[kind].forEach((o, i) => {
      const what = kind === "configMaps" ? "ConfigMap" : "Secret";
      if (seen.has(o.metadata.name))
        out.push({ path: `${where[kind](i)}.metadata.name`, message: `duplicate ${what} name "${o.metadata.name}"` });
      seen.add(o.metadata.name);
      if (o.metadata.namespace !== undefined && o.metadata.namespace !== namespace)
        out.push({
          path: `${where[kind](i)}.metadata.namespace`,
          message: `the ${what} is in namespace "${o.metadata.namespace}", the pod in "${namespace}"; a pod can use objects of its own namespace only`,
        });
    });
  }
  return out;
}

const text = new TextDecoder();

/** imagePullSecrets with named ones replaced by their Secret's credentials (kubelet's getPullSecretsForPod +
 * credentialprovider's secret parsing: `.dockerconfigjson` is {auths: {...}}, legacy `.dockercfg` the map itself). */
export function resolvePullSecrets(
  secrets: readonly PullSecret[] | undefined,
  objects: PodObjects,
): readonly PullSecret[] | undefined {
  if (!secrets?.some((s) => !s.auths)) return secrets;
  const byName = new Map(objects.secrets.map((s) => [s.metadata.name, s]));
  return secrets.map((ps) => {
    if (ps.auths || !ps.name) return ps;
    const s = byName.get(ps.name);
    const raw = s?.data[".dockerconfigjson"] ?? s?.data[".dockercfg"];
    if (!s || !raw) return ps;
    try {
      const j = JSON.parse(text.decode(raw)) as Record<string, unknown>;
      const auths = s.type === SECRET_TYPES.dockerCfg ? j : j["auths"];
      return { name: ps.name, auths: credentialFields(auths) };
    } catch {
      return { name: ps.name, auths: {} };
    }
  });
}

const FILE_VOLUME_KINDS = ["configMap", "secret", "downwardAPI", "projected"] as const;

/** A deployment without a node filesystem (Workers) cannot write volume files: each such volume is refused,
 * naming it and why. Env from the same objects works everywhere. */
export function fileVolumeErrors(pod: Pod, why: string): FieldError[] {
  const out: FieldError[] = [];
  (pod.spec.volumes ?? []).forEach((v, i) => {
    const kind = FILE_VOLUME_KINDS.find((k) => k in v);
    if (kind)
      out.push({ path: `spec.volumes[${i}].${kind}`, message: `${kind} volumes are not available here: ${why}` });
  });
  return out;
}

/** A docker config's `auths`, keeping per registry only the credential fields the runtime takes, and only as
 * strings (as kubelet's credentialprovider reads it: other fields, such as email, are dropped). What is kept is
 * what the pull-secret redaction knows of, so nothing else of the Secret can reach a message. */
function credentialFields(auths: unknown): NonNullable<PullSecret["auths"]> {
  const out: NonNullable<PullSecret["auths"]> = {};
  if (typeof auths !== "object" || auths === null) return out;
  for (const [registry, entry] of Object.entries(auths)) {
    if (typeof entry !== "object" || entry === null || registry === "") continue;
    const e = entry as Record<string, unknown>;
    const kept: Record<string, string> = {};
    for (const k of ["username", "password", "auth", "identitytoken", "registrytoken"] as const)
      if (typeof e[k] === "string") kept[k] = e[k];
    out[registry] = kept;
  }
  return out;
}
