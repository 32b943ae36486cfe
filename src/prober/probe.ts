// One probe, as kubelet's prober.runProbe does it (pkg/kubelet/prober/prober.go) with the handlers of
// pkg/probe/{exec,http,tcp,grpc}. exec runs through CRI ExecSync (so it works wherever the CRI client does,
// Workers through cri-proxy included); httpGet, tcpSocket and grpc open a connection from this process to
// the pod, through ProbeNetwork (src/host/probe-network.ts on Node; none on Workers).
import type { CriClient } from "../cri/client.js";
import { GrpcCode, isCriError, errorMessage } from "../cri/errors.js";
import type { Container, Probe } from "../pod/schema.js";
import { containerEnv, expand } from "../container/expansion.js";

/** pkg/probe: Success, Warning (counted as success), Failure, Unknown. */
export type RawResult = "Success" | "Warning" | "Failure" | "Unknown";

export interface ProbeOutcome {
  result: RawResult;
  output: string;
}

export interface HttpProbeRequest {
  url: string;
  /** The Host header (httpGet.host is the address; a `Host` header overrides the name sent). */
  headers: [string, string][];
  timeoutMs: number;
}

/** Connections from the prober to the pod. Each returns the probe's outcome; only a failure to even try
 * (a bug, not the pod's fault) throws. */
export interface ProbeNetwork {
  http(req: HttpProbeRequest): Promise<ProbeOutcome>;
  tcp(host: string, port: number, timeoutMs: number): Promise<ProbeOutcome>;
  grpc(host: string, port: number, service: string, timeoutMs: number): Promise<ProbeOutcome>;
}

/** pkg/probe: output kept for events/logs is bounded at 10 KiB. */
export const MAX_PROBE_OUTPUT = 10 * 1024;

/** A probe that could not be run (kubelet: "Probe errored"): the worker keeps the previous result. */
export class ProbeError extends Error {}

/** kubelet's User-Agent for probes: kube-probe/<major>.<minor>. */
export const PROBE_USER_AGENT = "kube-probe/1.33";

/** extractPort: a number, or the name of one of the container's ports. */
export function extractPort(port: number | string, container: Container): number {
  if (typeof port === "number") return port;
  const p = (container.ports ?? []).find((cp) => cp.name === port);
  if (!p) throw new ProbeError(`couldn't find port: ${port} in ${container.name}`);
  return p.containerPort;
}

/** formatURL, with IPv6 hosts bracketed. */
function formatURL(scheme: string, host: string, port: number, path: string): string {
  const h = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  const p = path.startsWith("/") ? path : `/${path}`;
  return `${scheme}://${h}:${port}${p}`;
}

const dec = new TextDecoder();

/** runProbe for one handler. `podIP` is the pod's IP (or the node's, for hostNetwork). */
export async function runProbe(
  cri: CriClient,
  net: ProbeNetwork | undefined,
  p: Probe,
  container: Container,
  containerId: string,
  podIP: string,
): Promise<ProbeOutcome> {
  const timeoutMs = p.timeoutSeconds * 1000;
  if (p.exec) {
    // ExpandContainerCommandOnlyStatic: $(VAR) from the container's own env.
    const vars = containerEnv(container);
    const cmd = p.exec.command.map((c) => expand(c, vars));
    try {
      // The runtime enforces the timeout. The call's deadline is the runtime request timeout beyond it, as
      // kubelet's remote client sets it: a deadline cut close to the timeout cancels runc while it is still
      // starting the process, which under load fed on itself until some containers failed every exec (110 pods
      // on 2 cores: bench/results/log-2026-12-07-full-node.md, bench/exec-deadline.ts).
      const r = await cri.execSync({ containerId, cmd, timeout: BigInt(p.timeoutSeconds) }, { workMs: timeoutMs });
      const out = dec.decode(concatBounded(r.stdout, r.stderr));
      return { result: r.exitCode === 0 ? "Success" : "Failure", output: out };
    } catch (e) {
      // ExecProbeTimeout: a command that outlives its timeout is a failure, not an error.
      if (isCriError(e, GrpcCode.DEADLINE_EXCEEDED) || /timeout .* exceeded|deadline exceeded/i.test(errorMessage(e)))
        return { result: "Failure", output: `command timed out after ${p.timeoutSeconds}s` };
      throw new ProbeError(`exec probe: ${errorMessage(e)}`);
    }
  }
  if (!net) throw new ProbeError("this deployment cannot open connections to pods");
  if (p.httpGet) {
    const g = p.httpGet;
    const port = extractPort(g.port, container);
    const host = g.host ?? podIP;
    // v1HeaderToHTTPHeader, then kubelet's defaults where the probe sets none.
    const headers: [string, string][] = (g.httpHeaders ?? []).map((h) => [h.name, h.value]);
    const has = (n: string) => headers.some(([k]) => k.toLowerCase() === n);
    if (!has("user-agent")) headers.push(["User-Agent", PROBE_USER_AGENT]);
    if (!has("accept")) headers.push(["Accept", "*/*"]);
    return net.http({ url: formatURL(g.scheme.toLowerCase(), host, port, g.path), headers, timeoutMs });
  }
  if (p.tcpSocket) return net.tcp(p.tcpSocket.host ?? podIP, extractPort(p.tcpSocket.port, container), timeoutMs);
  if (p.grpc) return net.grpc(podIP, p.grpc.port, p.grpc.service, timeoutMs);
  throw new ProbeError("missing probe handler");
}

function concatBounded(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(Math.min(MAX_PROBE_OUTPUT, a.length + b.length));
  out.set(a.subarray(0, out.length));
  if (a.length < out.length) out.set(b.subarray(0, out.length - a.length), a.length);
  return out;
}
