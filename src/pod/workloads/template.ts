// A workload's pod template as a pod: validated at intake with the pod's own rules (errors named under the
// template's path), and made into the pods the controllers create.
import { Pod, type OwnerReference } from "../schema.js";
import { fieldErrors, InvalidPodError, type FieldError } from "../validate.js";
import type { PodTemplate } from "./schema.js";

/** The pod input of a template, with the name, uid, labels, annotations and owner the controller gives it. */
export function podInput(
  t: PodTemplate,
  meta: {
    name: string;
    namespace: string;
    uid: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: OwnerReference[];
  },
): Record<string, unknown> {
  const labels = { ...(t.metadata.labels ?? {}), ...(meta.labels ?? {}) };
  const annotations = { ...(t.metadata.annotations ?? {}), ...(meta.annotations ?? {}) };
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: meta.name,
      namespace: meta.namespace,
      uid: meta.uid,
      ...(Object.keys(labels).length ? { labels } : {}),
      ...(Object.keys(annotations).length ? { annotations } : {}),
      ...(meta.ownerReferences ? { ownerReferences: meta.ownerReferences } : {}),
    },
    spec: structuredClone(t.spec),
  };
}

/** The template validated as a pod (errors under `at`, e.g. `spec.template`), or its errors. */
export function templatePod(
  t: PodTemplate,
  namespace: string,
  at: string,
): { ok: true; pod: Pod } | { ok: false; errors: FieldError[] } {
  const r = Pod.safeParse(podInput(t, { name: "template", namespace, uid: "template" }));
  if (r.success) return { ok: true, pod: r.data };
  return { ok: false, errors: fieldErrors(r.error, at) };
}

/** A derived pod, validated (the template passed intake, so this fails only on what the controller added). */
export function makePod(t: PodTemplate, meta: Parameters<typeof podInput>[1]): Pod {
  const r = Pod.safeParse(podInput(t, meta));
  if (!r.success) throw new InvalidPodError(fieldErrors(r.error, "template"));
  return r.data;
}
