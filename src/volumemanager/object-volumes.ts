// configMap, secret, downwardAPI and projected volumes: what their files hold (pure, kubelet's MakePayload
// for each plugin in pkg/volume/{configmap,secret,downwardapi,projected}), where they live (kubelet's
// layout: <rootDir>/pods/<uid>/volumes/<plugin>/<name>), and the port the node's filesystem implements
// (src/host/volumes/volume-files.ts: kubelet's AtomicWriter, a tmpfs for secret and projected volumes as kubelet
// mounts them, so secret data never reaches the node's disk).
import type { Container, Pod, Volume } from "../pod/schema.js";
import { configMapKeys, configMapValue, type PodObjects } from "../pod/objects.js";
import { cleanItemPath, type DownwardAPIVolumeFile, type KeyToPath } from "../pod/sources.js";
import { podVolumesDir } from "./pod-dirs.js";
import { fieldRefValue, resourceFieldValue, type DownwardInfo } from "../container/downward.js";

export type VolumePlugin =
  | "kubernetes.io~configmap"
  | "kubernetes.io~secret"
  | "kubernetes.io~downward-api"
  | "kubernetes.io~projected";

export interface VolumeFile {
  data: Uint8Array;
  /** Permission bits (0-0777). */
  mode: number;
}

/** One volume's content, as the writer puts it on the node. */
export interface VolumePayload {
  /** <rootDir>/pods/<uid>/volumes/<plugin>/<name> */
  dir: string;
  /** kubelet puts secret and projected volumes on a tmpfs (a memory emptyDir wraps them). */
  tmpfs: boolean;
  /** Relative path → file. */
  files: Map<string, VolumeFile>;
  /** pod.spec.securityContext.fsGroup: files get this group and group read (SetVolumeOwnership, read-only). */
  fsGroup?: number | undefined;
}

/** The node's filesystem for these volumes (Node: src/host/volumes/volume-files.ts; Workers have none). */
export interface VolumeFiles {
  /** Make `dir` hold exactly `files`, atomically (a reader sees the old set or the new, never a mix), and
   * leave it untouched when nothing changed (then false). A tmpfs volume is mounted first when it is not yet. */
  write(payload: VolumePayload): Promise<boolean>;
  /** Unmount every mount under `dir` (a plugin's dir under the pod's volumes dir, or one volume's) and remove it. */
  removeAll(dir: string): Promise<void>;
  /** The names in `dir` (none when it does not exist): the volumes a plugin holds for the pod. */
  list?(dir: string): Promise<string[]>;
}

/** kubelet's getPodVolumesDir */

const PLUGINS: Record<string, VolumePlugin> = {
  configMap: "kubernetes.io~configmap",
  secret: "kubernetes.io~secret",
  downwardAPI: "kubernetes.io~downward-api",
  projected: "kubernetes.io~projected",
};

export const FILE_VOLUME_PLUGINS: readonly VolumePlugin[] = Object.values(PLUGINS);

/** The plugin that backs a volume with files podsync writes, or undefined (hostPath, emptyDir). */
export function filePlugin(v: Volume): VolumePlugin | undefined {
  for (const k of Object.keys(PLUGINS)) if (k in v) return PLUGINS[k];
  return undefined;
}

export const volumeDir = (rootDir: string, uid: string, v: Volume) =>
  `${podVolumesDir(rootDir, uid)}/${filePlugin(v)}/${v.name}`;

/** Whether the pod has volumes whose files podsync writes. */
export const hasFileVolumes = (pod: Pod) => (pod.spec.volumes ?? []).some((v) => filePlugin(v) !== undefined);

const utf8 = new TextEncoder();

/** configmap.MakePayload / secret.MakePayload: every key under its own name, or only the listed items (a missing
 * key of an optional object is skipped; of a required one it is kubelet's error, and the mount fails). */
function keyPayload(
  out: Map<string, VolumeFile>,
  src: { get: (key: string) => Uint8Array | undefined; keys: string[]; missingKey: string },
  items: KeyToPath[] | undefined,
  defaultMode: number,
  optional: boolean | undefined,
): void {
  const { get, keys } = src;
  if (!items?.length) {
    for (const k of keys) out.set(k, { data: get(k)!, mode: defaultMode });
    return;
  }
  for (const it of items) {
    const data = get(it.key);
    if (data === undefined && !optional) throw new Error(`${src.missingKey}: ${it.key}`);
    // AtomicWriter's validatePayload cleans each path: "./app.conf" is written as app.conf (sources.ts).
    if (data !== undefined) out.set(cleanItemPath(it.path), { data, mode: it.mode ?? defaultMode });
  }
}

/** downwardapi.CollectData */
function downwardPayload(
  out: Map<string, VolumeFile>,
  items: DownwardAPIVolumeFile[] | undefined,
  defaultMode: number,
  pod: Pod,
  info: DownwardInfo,
): void {
  for (const it of items ?? []) {
    let value = "";
    if (it.fieldRef) value = fieldRefValue(pod, it.fieldRef.fieldPath, info);
    // A volume's resourceFieldRef names its container (validated), so the `self` argument is never used.
    else if (it.resourceFieldRef)
      value = resourceFieldValue(it.resourceFieldRef, pod, pod.spec.containers[0] as Container, info.node);
    out.set(cleanItemPath(it.path), { data: utf8.encode(value), mode: it.mode ?? defaultMode });
  }
}

/** Every file-backed volume's payload. Optional objects that are missing give an empty volume, as in kubelet; a
 * required one that is missing is the volume plugin's error (`secret "x" not found`: the object manager's
 * NotFound), so the mount fails (FailedMount) and the pod waits until a sync brings the object. */
export function volumePayloads(pod: Pod, objects: PodObjects, info: DownwardInfo): VolumePayload[] {
  const cms = new Map(objects.configMaps.map((c) => [c.metadata.name, c]));
  const secrets = new Map(objects.secrets.map((s) => [s.metadata.name, s]));
  const cmSource = (name: string, optional: boolean | undefined) => {
    const cm = cms.get(name);
    if (!cm && !optional) throw new Error(`configmap "${name}" not found`);
    return cm
      ? {
          keys: configMapKeys(cm),
          get: (k: string) => configMapValue(cm, k),
          missingKey: "configmap references non-existent config key",
        }
      : undefined;
  };
  const secretSource = (name: string, optional: boolean | undefined) => {
    const s = secrets.get(name);
    if (!s && !optional) throw new Error(`secret "${name}" not found`);
    return s
      ? {
          keys: Object.keys(s.data),
          get: (k: string) => (Object.hasOwn(s.data, k) ? s.data[k] : undefined),
          missingKey: "references non-existent secret key",
        }
      : undefined;
  };
  const out: VolumePayload[] = [];
  const fsGroup = pod.spec.securityContext?.fsGroup;
  for (const v of pod.spec.volumes ?? []) {
    const plugin = filePlugin(v);
    if (!plugin) continue;
    const files = new Map<string, VolumeFile>();
    if ("configMap" in v) {
      const src = cmSource(v.configMap.name, v.configMap.optional);
      if (src) keyPayload(files, src, v.configMap.items, v.configMap.defaultMode, v.configMap.optional);
    } else if ("secret" in v) {
      const src = secretSource(v.secret.secretName, v.secret.optional);
      if (src) keyPayload(files, src, v.secret.items, v.secret.defaultMode, v.secret.optional);
    } else if ("downwardAPI" in v) downwardPayload(files, v.downwardAPI.items, v.downwardAPI.defaultMode, pod, info);
    else if ("projected" in v) {
      const mode = v.projected.defaultMode;
      for (const s of v.projected.sources) {
        const ref = s.configMap ?? s.secret;
        const src = s.configMap
          ? cmSource(s.configMap.name, s.configMap.optional)
          : s.secret
            ? secretSource(s.secret.name, s.secret.optional)
            : undefined;
        if (src) keyPayload(files, src, ref!.items, mode, ref!.optional);
        if (s.downwardAPI) downwardPayload(files, s.downwardAPI.items, mode, pod, info);
      }
    }
    out.push({
      dir: volumeDir(info.node.rootDir, pod.metadata.uid, v),
      tmpfs: plugin === "kubernetes.io~secret" || plugin === "kubernetes.io~projected",
      files,
      fsGroup,
    });
  }
  return out;
}
