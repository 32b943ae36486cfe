// The HorizontalPodAutoscaler's other API versions, read as autoscaling/v2 where the API server converts them
// (pkg/apis/autoscaling/v1/conversion.go: targetCPUUtilizationPercentage is the one cpu Utilization metric, none
// is the v2 default; autoscaling/v2beta2 has v2's fields). autoscaling/v1 is served by Kubernetes 1.33 (the line
// podsync follows); v2beta2 was removed in 1.26 and is read with a warning; v2beta1 (another shape) is skipped
// with a warning, as kubectl apply fails that one document and applies the rest.
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The document as autoscaling/v2 (a copy), or a warning saying why it is skipped; undefined: not an HPA of
 * another version. */
export function hpaAsV2(
  doc: Record<string, unknown>,
  what: string,
): { doc: Record<string, unknown>; warning?: string } | { skip: string } | undefined {
  if (doc["kind"] !== "HorizontalPodAutoscaler") return undefined;
  const v = doc["apiVersion"];
  if (v === "autoscaling/v1") {
    const spec = isObject(doc["spec"]) ? { ...doc["spec"] } : {};
    const pct = spec["targetCPUUtilizationPercentage"];
    delete spec["targetCPUUtilizationPercentage"];
    if (pct !== undefined)
      spec["metrics"] = [
        { type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: pct } } },
      ];
    return { doc: { ...doc, apiVersion: "autoscaling/v2", spec } };
  }
  if (v === "autoscaling/v2beta2")
    return {
      doc: { ...doc, apiVersion: "autoscaling/v2" },
      warning: `${what}: autoscaling/v2beta2 HorizontalPodAutoscaler is deprecated in v1.23+, unavailable in v1.26+; read as autoscaling/v2 HorizontalPodAutoscaler (the same fields)`,
    };
  if (v === "autoscaling/v2beta1")
    return {
      skip: `${what} skipped: autoscaling/v2beta1 HorizontalPodAutoscaler is unavailable in v1.25+ (its metrics have another shape); use autoscaling/v2 HorizontalPodAutoscaler`,
    };
  return undefined;
}
