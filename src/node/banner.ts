// What start-up says on stderr (unless quiet): where the node listens, its policy, how to reach it, and every
// warning of a part that started degraded (state dir, probe state, workloads, TLS, the Services data plane).
import { X509Certificate } from "node:crypto";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { StateUnavailableError } from "../pleg/state-unavailable.js";
import type { Settings } from "../settings/node.js";
import { DEFAULT_HOST, DEFAULT_PORT } from "../settings/port.js";
import { DEV_ISSUER, type Keys } from "./config.js";

export interface BannerFacts {
  url: string;
  tlsInfo: { url: string; caCert: string; certFile?: string } | undefined;
  tlsWarning: string | undefined;
  stateDir: string;
  keys: Keys;
  /** The data plane's own lines, when it runs. */
  dataplaneLines: string[] | undefined;
  servicesRefusal: string | undefined;
  skipped: readonly string[];
  probeStoreError: StateUnavailableError | undefined;
  workloadsError: StateUnavailableError | undefined;
  stateError: StateUnavailableError | undefined;
}

export function bannerLines(s: Settings, f: BannerFacts): string[] {
  const { url, tlsInfo, stateDir, keys } = f;
  const lines = [
    `podsync listening on ${url}  (node "${s.PODSYNC_NODE_NAME}", CRI ${s.PODSYNC_CRI_ENDPOINT})`,
    `  policy:  ${s.PODSYNC_POLICY} (PODSYNC_POLICY: ${s.PODSYNC_POLICY === "privileged" ? "every pod field is allowed" : `pods beyond the ${s.PODSYNC_POLICY} Pod Security Standard are refused; privileged allows hostNetwork, hostPath and the like`})` +
      `;  exec: ${s.PODSYNC_ALLOW_EXEC ? "on" : "off (PODSYNC_ALLOW_EXEC=true turns it on)"}`,
    `  health:  curl ${url}/healthz      runtime: curl ${url}/readyz`,
  ];
  if (tlsInfo)
    lines.push(
      `  kubectl: ${tlsInfo.url} (the same port over TLS; certificate ${tlsInfo.certFile ?? "given"}, SHA-256 ${new X509Certificate(tlsInfo.caCert).fingerprint256}; see docs/kubectl.md)`,
    );
  const sock = s.PODSYNC_CRI_ENDPOINT.startsWith("unix://")
    ? s.PODSYNC_CRI_ENDPOINT.slice(7)
    : s.PODSYNC_CRI_ENDPOINT.startsWith("/")
      ? s.PODSYNC_CRI_ENDPOINT
      : "";
  if (sock && !existsSync(sock))
    lines.push(
      `  warning: ${sock} does not exist yet; /readyz will say 503 until the runtime runs (or set PODSYNC_CRI_ENDPOINT)`,
    );
  lines.push(
    `  state:   ${stateDir} (desired pods in pods/, used token ids in jti/, probe state in probes/${keys.dev && !s.PODSYNC_STATE_DIR ? "; dev mode keeps them beside the dev key, set PODSYNC_STATE_DIR" : ""})`,
  );
  if (f.tlsWarning) lines.push(`  warning: ${f.tlsWarning}`);
  if (f.dataplaneLines) lines.push(...f.dataplaneLines);
  else if (f.servicesRefusal) lines.push(`  warning: Services are refused: ${f.servicesRefusal}`);
  else
    lines.push(
      "  services: kept without a data plane (PODSYNC_SERVICE_DATAPLANE=off): ClusterIPs and NodePorts are not routed and cluster DNS does not answer; unset it (auto) to run them (root)",
    );
  for (const k of f.skipped) lines.push(`  warning: desired pod left out: ${k}`);
  const unusable = (what: string, e: StateUnavailableError, then: string) =>
    lines.push(`  warning: ${what} cannot be used (${e.code ?? String(e.cause)}); ${then}`);
  if (f.probeStoreError) unusable(join(stateDir, "probes"), f.probeStoreError, "probe state is kept in memory only");
  if (f.workloadsError)
    unusable(join(stateDir, "workloads.log"), f.workloadsError, "workloads are refused until it can");
  if (f.stateError) unusable(stateDir, f.stateError, "signed requests get 503 until it can");
  if (keys.dev)
    lines.push(
      `  dev key: ${keys.dev.keyFile} (issuer "${DEV_ISSUER}"; configure PODSYNC_JWKS_FILE + PODSYNC_ISSUERS for real keys)`,
      // The CLI finds the dev key in ./.podsync when run where the node was started, and the node at its default URL.
      `  try it:  npx podsync sync examples/pod.yaml${url === `http://${DEFAULT_HOST}:${DEFAULT_PORT}` ? "" : ` --url ${url}`}${resolve(s.PODSYNC_DEV_DIR) === resolve(".podsync") ? "" : ` --key ${keys.dev.keyFile}`}`,
    );
  return lines;
}
