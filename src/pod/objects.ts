// v1.ConfigMap and v1.Secret as they travel with a pod in a signed body (there is no API server to hold them),
// with the API server's validation (ValidateConfigMap, ValidateSecret) and its one write-time conversion:
// a Secret's stringData is merged into data (stringData wins), so the engine sees only bytes.
// Messages name keys and fields, never a value: a Secret's data must not reach a problem detail or a log.
import { z } from "zod";

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** IsConfigMapKey: what a data key may be (it becomes a file name in a volume). */
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;

/** Objects may hold at most this much data (the API server's MaxSecretSize / configmap limit: 1 MiB). */
export const MAX_OBJECT_DATA_BYTES = 1024 * 1024;

function keyIssue(key: string): string | undefined {
  if (key.length === 0 || key.length > 253) return "a data key must be 1 to 253 characters";
  if (!CONFIG_KEY.test(key)) return "a data key must consist of alphanumerics, '-', '_' or '.'";
  if (key === "." || key === "..") return `a data key may not be '${key}'`;
  if (key.startsWith("..")) return "a data key may not start with '..'";
  return undefined;
}

const dataKeys = <T extends z.ZodType>(value: T) =>
  z.record(z.string(), value).superRefine((rec, ctx) => {
    for (const k of Object.keys(rec)) {
      const bad = keyIssue(k);
      if (bad) ctx.addIssue({ code: "custom", path: [k], message: bad });
    }
  });

const ObjectMeta = z.strictObject({
  name: z
    .string()
    .max(253, "metadata.name must be no more than 253 characters")
    .regex(DNS1123_SUBDOMAIN, "metadata.name must be a DNS-1123 subdomain"),
  namespace: z.string().max(63).regex(DNS1123_LABEL, "metadata.namespace must be a DNS-1123 label").optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  // What `kubectl get -o yaml` adds: read-only, no intent; accepted and ignored.
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  creationTimestamp: z.union([z.string(), z.null()]).optional(),
  generation: z.number().optional(),
  selfLink: z.string().optional(),
  managedFields: z.array(z.unknown()).optional(),
  ownerReferences: z.array(z.unknown()).optional(),
});

const STD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const base64 = z.string().refine((s) => STD_BASE64.test(s), "must be base64 (standard alphabet, padded)");

export const ConfigMap = z
  .strictObject({
    // Optional in a JWS payload's configMaps array (the array says what they are); a document needs its kind.
    apiVersion: z.literal("v1").optional(),
    kind: z.literal("ConfigMap").optional(),
    metadata: ObjectMeta,
    data: dataKeys(z.string()).optional(),
    binaryData: dataKeys(base64).optional(),
    // No API server updates objects here: immutable is accepted and has nothing to guard.
    immutable: z.boolean().optional(),
  })
  .superRefine((cm, ctx) => {
    let size = 0;
    for (const [k, v] of Object.entries(cm.data ?? {})) {
      size += k.length + v.length;
      if (cm.binaryData && k in cm.binaryData)
        ctx.addIssue({
          code: "custom",
          path: ["binaryData", k],
          message: `key "${k}" is also in data; a key may be in one of them only`,
        });
    }
    for (const [k, v] of Object.entries(cm.binaryData ?? {})) size += k.length + (v.length * 3) / 4;
    if (size > MAX_OBJECT_DATA_BYTES)
      ctx.addIssue({ code: "custom", path: ["data"], message: "a ConfigMap must hold at most 1 MiB of data" });
  });

export const SECRET_TYPES = {
  opaque: "Opaque",
  dockerConfigJson: "kubernetes.io/dockerconfigjson",
  dockerCfg: "kubernetes.io/dockercfg",
  serviceAccountToken: "kubernetes.io/service-account-token",
} as const;

const SecretInput = z.strictObject({
  apiVersion: z.literal("v1").optional(),
  kind: z.literal("Secret").optional(),
  metadata: ObjectMeta,
  type: z.string().min(1).default(SECRET_TYPES.opaque),
  data: dataKeys(base64).optional(),
  stringData: dataKeys(z.string()).optional(),
  immutable: z.boolean().optional(),
});

const utf8 = new TextEncoder();
const decodeB64 = (s: string): Uint8Array => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

/** A Secret as the engine uses it: `data` decoded to bytes, stringData merged in. */
export const Secret = SecretInput.transform((s, ctx) => {
  const data: Record<string, Uint8Array> = {};
  for (const [k, v] of Object.entries(s.data ?? {})) data[k] = decodeB64(v);
  for (const [k, v] of Object.entries(s.stringData ?? {})) data[k] = utf8.encode(v);
  const size = Object.entries(data).reduce((n, [k, v]) => n + k.length + v.byteLength, 0);
  if (size > MAX_OBJECT_DATA_BYTES)
    ctx.addIssue({ code: "custom", path: ["data"], message: "a Secret must hold at most 1 MiB of data" });
  // ValidateSecret's per-type rules for the types a node can use.
  if (s.type === SECRET_TYPES.dockerConfigJson || s.type === SECRET_TYPES.dockerCfg) {
    const key = s.type === SECRET_TYPES.dockerConfigJson ? ".dockerconfigjson" : ".dockercfg";
    const raw = data[key];
    if (!raw) ctx.addIssue({ code: "custom", path: ["data", key], message: `a ${s.type} Secret needs data["${key}"]` });
    else {
      let ok = false;
      try {
        const j: unknown = JSON.parse(new TextDecoder().decode(raw));
        ok = typeof j === "object" && j !== null && !Array.isArray(j);
      } catch {
        ok = false;
      }
      // The reason only: a JSON parser's message could quote the credentials.
      if (!ok)
        ctx.addIssue({
          code: "custom",
          path: ["data", key],
          message: "must be a JSON object (the registry credentials file)",
        });
    }
  }
  return { apiVersion: s.apiVersion, kind: s.kind, metadata: s.metadata, type: s.type, data, immutable: s.immutable };
});

export type ConfigMap = z.output<typeof ConfigMap>;
export type Secret = z.output<typeof Secret>;

/** The ConfigMaps and Secrets that came with a pod, validated. */
export interface PodObjects {
  configMaps: ConfigMap[];
  secrets: Secret[];
}

export const NO_OBJECTS: PodObjects = { configMaps: [], secrets: [] };

/** A ConfigMap key's bytes (data as UTF-8, binaryData decoded), or undefined when it has no such key. */
export function configMapValue(cm: ConfigMap, key: string): Uint8Array | undefined {
  if (cm.data && Object.hasOwn(cm.data, key)) return utf8.encode(cm.data[key]!);
  if (cm.binaryData && Object.hasOwn(cm.binaryData, key)) return decodeB64(cm.binaryData[key]!);
  return undefined;
}

/** Every key of a ConfigMap (data, then binaryData). */
export const configMapKeys = (cm: ConfigMap): string[] => [
  ...Object.keys(cm.data ?? {}),
  ...Object.keys(cm.binaryData ?? {}),
];

/** Every secret value as text, for redacting runtime messages (values shorter than 4 characters are too
 * common to redact without mangling the message). */
export function secretValues(objects: PodObjects): string[] {
  const dec = new TextDecoder();
  const out = new Set<string>();
  for (const s of objects.secrets)
    for (const v of Object.values(s.data)) {
      const t = dec.decode(v).trim();
      if (t.length >= 4) out.add(t);
    }
  return [...out];
}

const b64 = (b: Uint8Array) => {
  let s = "";
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return btoa(s);
};

/** The objects as v1 objects again (a Secret's data base64, stringData already merged in), for the desired-state
 * store: what the schemas above read back to the same values. None when the pod came without objects. */
export function storedObjects(objects: PodObjects): { configMaps?: unknown[]; secrets?: unknown[] } | undefined {
  if (!objects.configMaps.length && !objects.secrets.length) return undefined;
  return {
    ...(objects.configMaps.length ? { configMaps: objects.configMaps } : {}),
    ...(objects.secrets.length
      ? {
          secrets: objects.secrets.map((s) => ({
            apiVersion: "v1",
            kind: "Secret",
            metadata: s.metadata,
            type: s.type,
            data: Object.fromEntries(Object.entries(s.data).map(([k, v]) => [k, b64(v)])),
            ...(s.immutable !== undefined ? { immutable: s.immutable } : {}),
          })),
        }
      : {}),
  };
}
