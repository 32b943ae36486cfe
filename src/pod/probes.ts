// Which probe handlers a deployment can run. A Worker reaches the node only through cri-proxy, so it can
// run exec probes (ExecSync through the proxy) but cannot open a connection to the pod: httpGet, tcpSocket
// and grpc probes are refused there, naming each field, rather than accepted and never run.
import { PROBE_HANDLERS, PROBE_KINDS, type Pod, type ProbeHandler } from "./schema.js";
import type { FieldError } from "./validate.js";

export const ALL_PROBE_HANDLERS: readonly ProbeHandler[] = PROBE_HANDLERS;

export function probeHandlerErrors(pod: Pod, allowed: readonly ProbeHandler[], why: string): FieldError[] {
  const out: FieldError[] = [];
  pod.spec.containers.forEach((c, i) => {
    for (const k of PROBE_KINDS)
      for (const h of PROBE_HANDLERS)
        if (c[k]?.[h] !== undefined && !allowed.includes(h))
          out.push({ path: `spec.containers[${i}].${k}.${h}`, message: `${h} probes cannot run on this deployment: ${why}; use an exec probe` });
  });
  return out;
}
