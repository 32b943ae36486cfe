// The Worker's Kubernetes API side for pull-mode nodes (docs/fleet.md "kubectl through the fleet"):
//   /fleet/{version,api,apis}, /fleet/api/v1/nodes[/N]   the registry as v1 Nodes (kubectl get nodes --show-labels,
//                                                         -o wide), Ready from the registry's lastSeen; a fleet
//                                                         token with act read (aud the fleet)
//   /fleet/nodes/N/{version,api,apis,openapi}/...       the node's own Kubernetes API, reached over its outbound link
//                                                         as a stream (streams.ts); GET only. The caller's read token
//                                                         (aud N) is checked here and again by the node itself.
//   the same, .../pods/P/exec as a WebSocket upgrade        kubectl exec: a session over the link (sessions.ts), the
//                                                         node's own listener deciding (PODSYNC_ALLOW_EXEC, the
//                                                         token's exec claim)
// Errors are metav1.Status objects. Attach, port-forward and SPDY upgrades are not carried: refused.
import pkg from "../../../package.json" with { type: "json" };
import type { VerifiedToken } from "../../auth/verify.js";
import type { FleetNode } from "../../http/fleet/node-view.js";
import type { StreamOpen } from "../../http/fleet/protocol.js";
import { apiGroupList, apiResourceList, apiVersions, versionInfo, KUBE_GIT_VERSION } from "../../kubeapi/discovery.js";
import type { V1Node } from "../../kubeapi/node-object.js";
import { isKubePath } from "../../kubeapi/paths.js";
import { EXEC_PATH } from "../../kubeapi/exec-check.js";
import { parseLabelSelector } from "../../kubeapi/selectors.js";
import { KubeStatusError, notFound, toKubeStatus } from "../../kubeapi/status.js";
import { NODE_COLUMNS, nodeCells, table, wantsTable, type IncludeObject } from "../../kubeapi/table.js";

export interface FleetKubeDeps {
  /** The owner's fleet token with act read (aud the fleet). */
  fleetReader(req: Request): Promise<VerifiedToken>;
  /** The caller's read token for node N (aud N), as the node checks it. */
  nodeReader(req: Request, node: string): Promise<VerifiedToken>;
  /** Every node the token's selector covers. */
  nodes(t: VerifiedToken): Promise<FleetNode[]>;
  /** The node's answer over its link. */
  stream(node: string, open: Omit<StreamOpen, "type" | "id">): Promise<Response>;
  /** A WebSocket upgrade (kubectl exec) over the node's link: the 101 joined to a session, or the node's refusal. */
  session(node: string, req: Request, open: Omit<StreamOpen, "type" | "id" | "method" | "upgrade">): Promise<Response>;
}

/** The Kubernetes path under /fleet, or under /fleet/nodes/N; undefined for the fleet's own routes. */
export function fleetKubePath(path: string, node: string | undefined, rest: string): string | undefined {
  if (node !== undefined) return isKubePath(rest) ? rest : undefined;
  const sub = path.slice("/fleet".length);
  return sub !== "/nodes" && isKubePath(sub) ? sub : undefined;
}

const NODES_RESOURCE = {
  name: "nodes",
  singularName: "node",
  namespaced: false,
  kind: "Node",
  verbs: ["get", "list"],
  shortNames: ["no"],
};

/** Only the headers the node's API reads are carried. */
const FORWARDED = ["authorization", "accept", "user-agent", "kubectl-command", "kubectl-session"];
/** An exec upgrade's: the token and the subprotocols kubectl offers. */
const SESSION_FORWARDED = [
  "authorization",
  "sec-websocket-protocol",
  "user-agent",
  "kubectl-command",
  "kubectl-session",
];
const carried = (req: Request, names: string[]): [string, string][] =>
  names.flatMap((h) => {
    const v = req.headers.get(h);
    return v === null ? [] : [[h, v] as [string, string]];
  });

export async function serveFleetKube(
  d: FleetKubeDeps,
  req: Request,
  kubePath: string,
  node: string | undefined,
): Promise<Response> {
  try {
    const method = req.method;
    if (node !== undefined) {
      // kubectl exec, and its SPDY fallback (a POST: the runtime does not hand a Worker SPDY's Upgrade header).
      const upgrade = req.headers.get("upgrade");
      if (upgrade || (method === "POST" && EXEC_PATH.test(kubePath)))
        return await upgradeOverLink(d, req, kubePath, node, upgrade ?? "");
      if (method !== "GET" && method !== "HEAD")
        throw new KubeStatusError(405, "MethodNotAllowed", `the fleet serves a node's API read-only (got ${method})`);
      await d.nodeReader(req, node);
      const url = new URL(req.url);
      return await d.stream(node, { method, path: kubePath + url.search, headers: carried(req, FORWARDED) });
    }
    if (method !== "GET") throw new KubeStatusError(405, "MethodNotAllowed", "the fleet's node list is read-only");
    const t = await d.fleetReader(req);
    return await registryApi(d, t, req, kubePath);
  } catch (e) {
    const s = toKubeStatus(e);
    return Response.json(s.toStatus(), { status: s.code });
  }
}

const ONLY_EXEC =
  "over a pull-mode node's fleet link only kubectl exec is carried, as a WebSocket (v5.channel.k8s.io or v4.channel.k8s.io: kubectl 1.30 or later); attach, port-forward and SPDY are not: use kubectl against the node's own loopback API";

/** kubectl exec as a WebSocket: a session over the link. Its SPDY fallback (a POST, after the node refused the
 * WebSocket) is carried as a bodiless POST, so the node's own exec gates answer it (exec off, a token without exec); any other
 * answer, and any other upgrade, is refused here. */
async function upgradeOverLink(
  d: FleetKubeDeps,
  req: Request,
  kubePath: string,
  node: string,
  upgrade: string,
): Promise<Response> {
  const exec = EXEC_PATH.test(kubePath);
  const path = kubePath + new URL(req.url).search;
  if (exec && upgrade.toLowerCase() === "websocket" && req.method === "GET") {
    await d.nodeReader(req, node);
    return d.session(node, req, { path, headers: carried(req, SESSION_FORWARDED) });
  }
  if (exec && req.method === "POST") {
    await d.nodeReader(req, node);
    const r = await d.stream(node, { method: "POST", path, headers: carried(req, FORWARDED) });
    if (r.status === 401 || r.status === 403) return r;
    await r.body?.cancel();
  }
  throw new KubeStatusError(403, "Forbidden", ONLY_EXEC);
}

async function registryApi(d: FleetKubeDeps, t: VerifiedToken, req: Request, p: string): Promise<Response> {
  const url = new URL(req.url);
  switch (p.replace(/\/$/, "")) {
    case "/version":
      return Response.json(versionInfo(pkg.version, "amd64"));
    case "/api":
      return Response.json(apiVersions(url.host));
    case "/apis":
      return Response.json(apiGroupList([]));
    case "/api/v1":
      return Response.json(apiResourceList({ group: "", version: "v1", resources: [NODES_RESOURCE] }));
  }
  const m = /^\/api\/v1\/nodes(?:\/([^/]+))?$/.exec(p);
  if (!m) throw notFound("", p);
  const now = Date.now();
  let all = (await d.nodes(t)).map((n) => v1Node(n));
  const name = m[1] && decodeURIComponent(m[1]);
  const sel = url.searchParams.get("labelSelector");
  if (sel) {
    const s = parseLabelSelector(sel);
    all = all.filter((n) => s.matches(n.metadata.labels));
  }
  if (name) {
    const one = all.find((n) => n.metadata.name === name);
    if (!one) throw notFound("nodes", name);
    all = [one];
  }
  if (wantsTable(req.headers.get("accept") ?? undefined)) {
    const include = (url.searchParams.get("includeObject") ?? "Metadata") as IncludeObject;
    return Response.json(table(NODE_COLUMNS, all, (n) => nodeCells(n, now), include, { resourceVersion: "" }));
  }
  if (name) return Response.json(all[0]);
  return Response.json({ kind: "NodeList", apiVersion: "v1", metadata: { resourceVersion: "" }, items: all });
}

/** A registry row as a v1 Node: Ready True while the registry calls it Ready (its link open and heard within 40 s),
 * False once NotReady (the link closed, or silent), Unknown when never connected (the node lifecycle controller's
 * NodeStatusUnknown). The kubelet version column is the agent's version. */
export function v1Node(n: FleetNode): V1Node {
  const st = n.status;
  const ready = st.condition === "Ready" ? "True" : st.condition === "NotReady" ? "False" : "Unknown";
  const why: Record<typeof ready, [string, string]> = {
    True: ["FleetLinkReady", "the node's fleet link is open and heard from"],
    False: ["FleetLinkDown", st.revoked ? "the node is revoked" : "the node's fleet link is closed or silent"],
    Unknown: ["NodeStatusUnknown", "the node has never connected"],
  };
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: n.metadata.name,
      uid: `fleet-${n.metadata.name}`,
      labels: n.metadata.labels,
      annotations: { "fleet.podsync.dev/generation": String(st.generation) },
      creationTimestamp: n.metadata.creationTimestamp,
    },
    spec: { taints: n.spec.taints as NonNullable<V1Node["spec"]["taints"]> },
    status: {
      capacity: st.capacity,
      allocatable: st.capacity,
      conditions: [
        {
          type: "Ready",
          status: ready,
          lastHeartbeatTime: st.lastSeen,
          lastTransitionTime: st.lastSeen,
          reason: why[ready][0],
          message: why[ready][1],
        },
      ],
      addresses: [],
      daemonEndpoints: { kubeletEndpoint: { Port: 0 } },
      nodeInfo: {
        machineID: "",
        systemUUID: "",
        bootID: "",
        kernelVersion: "",
        osImage: "",
        containerRuntimeVersion: "",
        kubeletVersion: st.agentVersion || KUBE_GIT_VERSION,
        kubeProxyVersion: "",
        operatingSystem: "linux",
        architecture: st.capacity["arch"] ?? "",
      },
    },
  };
}
