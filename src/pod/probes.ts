// Which probe handlers a deployment can run. A Worker reaches the node only through cri-proxy, so it can
// run exec probes (ExecSync through the proxy) but cannot open a connection to the pod: httpGet, tcpSocket
// and grpc probes are refused there, naming each field, rather than accepted and never run.
import { PROBE_HANDLERS, PROBE_KINDS, type Pod, type ProbeHandler } from "./schema.js";
import type { FieldError } from "./validate.js";

export const ALL_PROBE_HANDLERS: readonly ProbeHandler[] = PROBE_HANDLERS;

export function probeHandlerErrors(pod: Pod, allowed: readonly ProbeHandler[], why: string): FieldError[] {
  const out: FieldError[] = [];
  for (const kind of ["initContainers", "containers"] as const)
    (pod.spec[kind] ?? []).forEach((c, i) => {
      for (const k of PROBE_KINDS)
        for (const h of PROBE_HANDLERS)
          if (c[k]?.[h] !== undefined && !allowed.includes(h))
            out.push({
              path: `spec.${kind}[${i}].${k}.${h}`,
              message: `${h} probes cannot run on this deployment: ${why}; use an exec probe`,
            });
      // Lifecycle hooks make the same connections (sleep needs none).
      for (const hook of ["postStart", "preStop"] as const)
        if (c.lifecycle?.[hook]?.httpGet !== undefined && !allowed.includes("httpGet"))
          out.push({
            path: `spec.${kind}[${i}].lifecycle.${hook}.httpGet`,
            message: `httpGet hooks cannot run on this deployment: ${why}; use an exec or sleep hook`,
          });
    });
  return out;
}
