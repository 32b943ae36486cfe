// Env values from the ConfigMaps and Secrets signed with the pod and from the downward API, resolved the way
// kubelet's makeEnvironmentVariables resolves them (kubelet_pods.go). A missing object or key was refused at
// validation unless optional, so here missing normally means optional: the entry is skipped, as kubelet
// skips it. A required one missing (a caller that did not pass the objects) fails the container's start
// with kubelet's words (CreateContainerConfigError), never an empty value.
import type { Container, Pod } from "../pod/schema.js";
import type { PodObjects } from "../pod/objects.js";
import type { EnvResolver } from "./expansion.js";
import { fieldRefValue, resourceFieldValue, type DownwardInfo } from "./downward.js";

const text = new TextDecoder();

/** Whether a container takes env from outside its spec (and so needs a resolver). */
export const usesEnvSources = (c: Container) =>
  (c.envFrom?.length ?? 0) > 0 || (c.env ?? []).some((e) => e.valueFrom !== undefined);

/** Whether a container's env needs the pod's IPs (status.podIP(s)), which a new sandbox reports only in its status. */
export const needsPodIPs = (c: Container) =>
  (c.env ?? []).some((e) => e.valueFrom?.fieldRef?.fieldPath.startsWith("status.podIP") === true);

export function envResolver(pod: Pod, container: Container, objects: PodObjects, info: DownwardInfo): EnvResolver {
  const cms = new Map(objects.configMaps.map((c) => [c.metadata.name, c]));
  const secrets = new Map(objects.secrets.map((s) => [s.metadata.name, s]));
  const ns = pod.metadata.namespace;
  const required = (optional: boolean | undefined, what: string) => {
    if (!optional) throw new Error(what);
    return undefined;
  };
  return {
    from(f) {
      const prefix = f.prefix ?? "";
      if (f.configMapRef) {
        const cm = cms.get(f.configMapRef.name);
        // kubelet takes data only (binaryData is not env).
        if (cm) return Object.entries(cm.data ?? {}).map(([k, v]) => [prefix + k, v]);
        return required(f.configMapRef.optional, `configmap "${f.configMapRef.name}" not found`) ?? [];
      }
      const s = f.secretRef ? secrets.get(f.secretRef.name) : undefined;
      if (s) return Object.entries(s.data).map(([k, v]) => [prefix + k, text.decode(v)]);
      return required(f.secretRef?.optional, `secret "${f.secretRef?.name}" not found`) ?? [];
    },
    value(src) {
      if (src.fieldRef) return fieldRefValue(pod, src.fieldRef.fieldPath, info);
      if (src.resourceFieldRef) return resourceFieldValue(src.resourceFieldRef, pod, container, info.node);
      if (src.configMapKeyRef) {
        const { name, key, optional } = src.configMapKeyRef;
        const cm = cms.get(name);
        // kubelet reads data only here (binaryData is not env); a key only in binaryData is a missing key.
        if (cm?.data && Object.hasOwn(cm.data, key)) return cm.data[key];
        return required(
          optional,
          cm ? `couldn't find key ${key} in ConfigMap ${ns}/${name}` : `configmap "${name}" not found`,
        );
      }
      if (src.secretKeyRef) {
        const { name, key, optional } = src.secretKeyRef;
        const s = secrets.get(name);
        if (s && Object.hasOwn(s.data, key)) return text.decode(s.data[key]);
        return required(
          optional,
          s ? `couldn't find key ${key} in Secret ${ns}/${name}` : `secret "${name}" not found`,
        );
      }
      return undefined;
    },
  };
}
