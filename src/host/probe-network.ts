// Probe connections from this node to its pods (the Node entry), as pkg/probe/{http,tcp,grpc} make them.
// http: one request, no keep-alive, redirects not followed (a 3xx is kubelet's Warning, a success), the
//   body read up to 10 KiB; 2xx/3xx succeed, anything else fails "HTTP probe failed with statuscode: N";
//   TLS certificates are not verified (kubelet's InsecureSkipVerify).
// tcp: a connect within the timeout succeeds.
// grpc: grpc.health.v1.Health/Check over an insecure channel, with the two messages encoded here by hand
//   (HealthCheckRequest{string service = 1}, HealthCheckResponse{ServingStatus status = 1}) on
//   @grpc/grpc-js, so no generated code or new dependency; SERVING succeeds.
import * as http from "node:http";
import * as https from "node:https";
import { connect } from "node:net";
import * as grpc from "@grpc/grpc-js";
import { MAX_PROBE_OUTPUT, type ProbeNetwork, type ProbeOutcome } from "../prober/probe.js";

const SERVING_STATUS = ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"];

function httpProbe(url: string, headers: [string, string][], timeoutMs: number): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    const u = new URL(url);
    const mod = u.protocol === "https:" ? https : http;
    const hdrs: Record<string, string> = { connection: "close" };
    for (const [k, v] of headers) hdrs[k.toLowerCase()] = v;
    let done = false;
    const finish = (o: ProbeOutcome) => {
      if (!done) {
        done = true;
        resolve(o);
      }
    };
    const req = mod.request(
      u,
      { method: "GET", headers: hdrs, agent: false, rejectUnauthorized: false, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (b: Buffer) => {
          if (size < MAX_PROBE_OUTPUT) chunks.push(b.subarray(0, MAX_PROBE_OUTPUT - size));
          size += b.length;
        });
        res.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8");
          const code = res.statusCode ?? 0;
          if (code >= 200 && code < 400)
            finish(
              code >= 300
                ? { result: "Warning", output: `Probe terminated redirects, Response body: ${body}` }
                : { result: "Success", output: body },
            );
          else finish({ result: "Failure", output: `HTTP probe failed with statuscode: ${code}` });
        });
        res.on("error", (e) => finish({ result: "Failure", output: e.message }));
      },
    );
    // The whole probe, not just idle time, is bounded by the timeout (Go's http.Client.Timeout).
    const t = setTimeout(() => {
      req.destroy();
      finish({
        result: "Failure",
        output: `Get "${url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
      });
    }, timeoutMs);
    req.on("close", () => clearTimeout(t));
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (e) => finish({ result: "Failure", output: `Get "${url}": ${e.message}` }));
    req.end();
  });
}

function tcpProbe(host: string, port: number, timeoutMs: number): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    const addr = `${host.includes(":") ? `[${host}]` : host}:${port}`;
    const sock = connect({ host, port });
    const t = setTimeout(() => {
      sock.destroy();
      resolve({ result: "Failure", output: `dial tcp ${addr}: i/o timeout` });
    }, timeoutMs);
    sock.once("connect", () => {
      clearTimeout(t);
      sock.destroy();
      resolve({ result: "Success", output: "" });
    });
    sock.once("error", (e) => {
      clearTimeout(t);
      resolve({ result: "Failure", output: `dial tcp ${addr}: ${e.message}` });
    });
  });
}

function encodeRequest(service: string): Buffer {
  if (!service) return Buffer.alloc(0);
  const s = Buffer.from(service, "utf8");
  const len: number[] = [];
  let n = s.length;
  do {
    len.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
    n >>>= 7;
  } while (n > 0);
  return Buffer.concat([Buffer.from([0x0a, ...len]), s]);
}

/** HealthCheckResponse.status (field 1, varint); other fields skipped. */
export function decodeHealthStatus(b: Buffer): number {
  let i = 0;
  let status = 0;
  const varint = () => {
    let v = 0;
    let shift = 0;
    for (;;) {
      const x = b[i++]!;
      v += (x & 0x7f) * 2 ** shift;
      if (!(x & 0x80)) return v;
      shift += 7;
    }
  };
  while (i < b.length) {
    const tag = varint();
    const wire = tag & 7;
    if (tag >>> 3 === 1 && wire === 0) status = varint();
    else if (wire === 0) varint();
    else if (wire === 2) i += varint();
    else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else break;
  }
  return status;
}

function grpcProbe(host: string, port: number, service: string, timeoutMs: number): Promise<ProbeOutcome> {
  const addr = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  const client = new grpc.Client(addr, grpc.credentials.createInsecure(), {
    "grpc.primary_user_agent": "kube-probe/1.33",
  });
  const timeout = `${timeoutMs / 1000}s`;
  return new Promise<ProbeOutcome>((resolve) => {
    client.makeUnaryRequest(
      "/grpc.health.v1.Health/Check",
      (s: string) => encodeRequest(s),
      (b: Buffer) => decodeHealthStatus(b),
      service,
      new grpc.Metadata(),
      { deadline: Date.now() + timeoutMs },
      (err, status) => {
        if (err) {
          if (err.code === grpc.status.UNIMPLEMENTED)
            return resolve({
              result: "Failure",
              output: `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${err.details}`,
            });
          if (err.code === grpc.status.DEADLINE_EXCEEDED)
            return resolve({ result: "Failure", output: `timeout: health rpc did not complete within ${timeout}` });
          if (err.code === grpc.status.UNAVAILABLE)
            return resolve({
              result: "Failure",
              output: `error: failed to connect service at "${addr}": ${err.details}`,
            });
          return resolve({ result: "Failure", output: `error: health rpc probe failed: ${err.message}` });
        }
        if (status !== 1)
          return resolve({
            result: "Failure",
            output: `service unhealthy (responded with "${SERVING_STATUS[status ?? 0] ?? status}")`,
          });
        resolve({ result: "Success", output: "service is healthy" });
      },
    );
  }).finally(() => client.close());
}

/** A probe with no address to go to: the pod has no IP yet (its sandbox has none, or is not ready) and the probe
 * names no host. Node's net.connect and Go's dialer both take an empty host for the local system, so it would
 * probe the node's own loopback; it fails instead, with no connection made. */
const NO_POD_IP: ProbeOutcome = {
  result: "Failure",
  output: "no pod IP: the pod has no address to probe (and the probe names no host)",
};

/** The host part of a probe URL ("" for http://:8080/). */
const urlHost = (url: string) => /^[a-z][a-z0-9+.-]*:\/\/(\[[^\]]*\]|[^:/?#]*)/i.exec(url)?.[1] ?? "";

export const nodeProbeNetwork: ProbeNetwork = {
  http: async (r) => (urlHost(r.url) ? httpProbe(r.url, r.headers, r.timeoutMs) : NO_POD_IP),
  tcp: async (host, port, timeoutMs) => (host ? tcpProbe(host, port, timeoutMs) : NO_POD_IP),
  grpc: async (host, port, service, timeoutMs) => (host ? grpcProbe(host, port, service, timeoutMs) : NO_POD_IP),
};

/** The node's addresses for status.hostIPs: the first non-internal IPv4 and IPv6 (kubelet's node IPs). */
export async function nodeHostIPs(): Promise<string[]> {
  const { networkInterfaces } = await import("node:os");
  const all = Object.values(networkInterfaces())
    .flatMap((l) => l ?? [])
    .filter((a) => !a.internal);
  return [
    all.find((a) => a.family === "IPv4")?.address,
    all.find((a) => a.family === "IPv6" && !a.address.startsWith("fe80"))?.address,
  ].filter((x): x is string => !!x);
}
