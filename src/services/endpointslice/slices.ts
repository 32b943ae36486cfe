// Package services/ — the node's Services: EndpointSlices from the node's pods (this folder), the env vars'
// source, the allocation of ClusterIPs and NodePorts (allocate.ts) and the source the data plane subscribes to
// (source.ts). Agent layer: imports the pod model and status types; never HTTP, kubeapi or an entry point.
//
// The EndpointSlice controller's computation, pure: a Service and the pods of its namespace in, the
// discovery.k8s.io/v1 EndpointSlices out, as pkg/controller/endpointslice's reconciler makes them
// (staging/src/k8s.io/endpointslice: reconciler.go reconcileByAddressType, utils.go podToEndpoint,
// getEndpointPorts, FindPort, newEndpointSlice, setEndpointSliceLabels; util ShouldPodBeInEndpoints,
// ShouldSetHostname, IsPodReady). Pods are grouped by the ports they resolve to (a named targetPort is looked up
// per pod), at most 100 endpoints a slice (--max-endpoints-per-slice), with one empty placeholder slice for a
// Service whose selector matches nothing.
//
// Where podsync differs: a slice's name is `<service>-` and five characters derived from what it holds (the
// controller's are random), so the same pods give the same names after a restart; there is no Node object to
// read a zone from (one node, no topology hints); the endpoints are sorted by pod name.
import { isServiceIPSet, type Service, type ServicePort } from "../../pod/workloads/service.js";

export const LABEL_SERVICE_NAME = "kubernetes.io/service-name";
export const LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by";
export const LABEL_HEADLESS = "service.kubernetes.io/headless";
export const CONTROLLER_NAME = "endpointslice-controller.k8s.io";
export const MAX_ENDPOINTS_PER_SLICE = 100;

/** What the computation reads of a pod: a v1.Pod (the node's pods as the Kubernetes API shows them fit it). */
export interface EndpointPod {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    labels?: Record<string, string> | undefined;
    deletionTimestamp?: string | null | undefined;
  };
  spec?:
    | {
        hostname?: string | undefined;
        subdomain?: string | undefined;
        nodeName?: string | undefined;
        containers: readonly { ports?: readonly ContainerPortView[] | undefined }[];
        initContainers?:
          | readonly { restartPolicy?: string | undefined; ports?: readonly ContainerPortView[] | undefined }[]
          | undefined;
      }
    | undefined;
  status: {
    phase?: string | undefined;
    podIP?: string | undefined;
    podIPs?: readonly { ip: string }[] | undefined;
    conditions?: readonly { type: string; status: string }[] | undefined;
  };
}
interface ContainerPortView {
  name?: string | undefined;
  containerPort: number;
  protocol?: string | undefined;
}

export type AddressType = "IPv4" | "IPv6";

/** discovery/v1 EndpointPort. */
export interface EndpointPort {
  name: string;
  port: number;
  protocol: "TCP" | "UDP";
  appProtocol?: string;
}

/** discovery/v1 Endpoint. */
export interface Endpoint {
  addresses: string[];
  conditions: { ready: boolean; serving: boolean; terminating: boolean };
  hostname?: string;
  nodeName?: string;
  targetRef: { kind: "Pod"; namespace: string; name: string; uid: string };
}

/** discovery/v1 EndpointSlice. */
export interface EndpointSlice {
  apiVersion: "discovery.k8s.io/v1";
  kind: "EndpointSlice";
  metadata: {
    name: string;
    namespace: string;
    generateName: string;
    labels: Record<string, string>;
    ownerReferences: {
      apiVersion: "v1";
      kind: "Service";
      name: string;
      uid: string;
      controller: true;
      blockOwnerDeletion: true;
    }[];
  };
  addressType: AddressType;
  endpoints: Endpoint[];
  ports: EndpointPort[];
}

/** endpointutil.IsPodReady: the Ready condition is True. */
export const isPodReady = (p: EndpointPod) =>
  (p.status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");

/** podutil.IsPodTerminal. */
const isTerminal = (p: EndpointPod) => p.status.phase === "Succeeded" || p.status.phase === "Failed";

/** endpointutil.ShouldPodBeInEndpoints (the reconciler passes includeTerminating = true). */
export function shouldPodBeInEndpoints(p: EndpointPod, includeTerminating: boolean): boolean {
  if (isTerminal(p)) return false;
  if (!p.status.podIP && !(p.status.podIPs?.length ?? 0)) return false;
  if (!includeTerminating && p.metadata.deletionTimestamp) return false;
  return true;
}

/** endpointutil.ShouldSetHostname: the pod names this Service as its subdomain and has a hostname. */
export const shouldSetHostname = (p: EndpointPod, s: Service) =>
  Boolean(p.spec?.hostname) && p.spec?.subdomain === s.metadata.name && p.metadata.namespace === s.metadata.namespace;

/** FindPort: a number is itself; a name is the first container port of that name and protocol (regular
 * containers first, then sidecars: init containers with restartPolicy Always); undefined when none has it. */
export function findPort(p: EndpointPod, sp: Pick<ServicePort, "targetPort" | "protocol">): number | undefined {
  const t = sp.targetPort;
  if (typeof t === "number") return t;
  if (t === undefined) return undefined;
  const match = (ports: readonly ContainerPortView[] | undefined) =>
    (ports ?? []).find((cp) => cp.name === t && (cp.protocol ?? "TCP") === sp.protocol)?.containerPort;
  for (const c of p.spec?.containers ?? []) {
    const n = match(c.ports);
    if (n !== undefined) return n;
  }
  for (const c of p.spec?.initContainers ?? []) {
    if (c.restartPolicy !== "Always") continue;
    const n = match(c.ports);
    if (n !== undefined) return n;
  }
  return undefined;
}

/** getEndpointPorts: the Service's ports as this pod serves them (a port it cannot resolve is left out). */
export function endpointPorts(s: Service, p: EndpointPod): EndpointPort[] {
  const out: EndpointPort[] = [];
  for (const sp of s.spec.ports) {
    const port = findPort(p, sp);
    if (port === undefined) continue;
    out.push({
      name: sp.name ?? "",
      port,
      protocol: sp.protocol,
      ...(sp.appProtocol !== undefined ? { appProtocol: sp.appProtocol } : {}),
    });
  }
  return out;
}

const isIPv6 = (ip: string) => ip.includes(":");

/** getEndpointAddresses: the pod's IPs of one family. */
function addressesOf(p: EndpointPod, t: AddressType): string[] {
  const ips = p.status.podIPs?.length ? p.status.podIPs.map((x) => x.ip) : p.status.podIP ? [p.status.podIP] : [];
  return ips.filter((ip) => isIPv6(ip) === (t === "IPv6"));
}

/** podToEndpoint: serving is readiness; terminating is a deletion; ready is serving and not terminating, or
 * always with publishNotReadyAddresses. */
export function podToEndpoint(p: EndpointPod, s: Service, t: AddressType): Endpoint {
  const serving = isPodReady(p);
  const terminating = Boolean(p.metadata.deletionTimestamp);
  const ready = (s.spec.publishNotReadyAddresses ?? false) || (serving && !terminating);
  return {
    addresses: addressesOf(p, t),
    conditions: { ready, serving, terminating },
    ...(shouldSetHostname(p, s) ? { hostname: p.spec!.hostname! } : {}),
    ...(p.spec?.nodeName ? { nodeName: p.spec.nodeName } : {}),
    targetRef: { kind: "Pod", namespace: p.metadata.namespace, name: p.metadata.name, uid: p.metadata.uid },
  };
}

/** getAddressTypesForService: the Service's families; a Service without them, by its ClusterIP (headless: both). */
export function addressTypes(s: Service): AddressType[] {
  const fams = s.spec.ipFamilies ?? [];
  if (fams.length) return fams.map((f) => (f === "IPv6" ? "IPv6" : "IPv4"));
  if (isServiceIPSet(s)) return [isIPv6(s.spec.clusterIP!) ? "IPv6" : "IPv4"];
  return ["IPv4", "IPv6"];
}

/** Whether labels select the pod: a Service's selector is a plain map, every pair must match (an empty map selects
 * every pod of the namespace, as labels.SelectorFromSet does). */
export const selects = (selector: Record<string, string>, l: Record<string, string> | undefined) =>
  Object.entries(selector).every(([k, v]) => l?.[k] === v);

/** setEndpointSliceLabels: the Service's labels but the reserved ones, then the reserved ones set. */
function sliceLabels(s: Service): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(s.metadata.labels ?? {}))
    if (k !== LABEL_SERVICE_NAME && k !== LABEL_MANAGED_BY && k !== LABEL_HEADLESS) out[k] = v;
  if (!isServiceIPSet(s)) out[LABEL_HEADLESS] = "";
  out[LABEL_SERVICE_NAME] = s.metadata.name;
  out[LABEL_MANAGED_BY] = CONTROLLER_NAME;
  return out;
}

/** The alphabet of generateName's suffixes (apimachinery's rand.String). */
const ALPHABET = "bcdfghjklmnpqrstvwxz2456789";
function suffixOf(key: string): string {
  // FNV-1a, 32 bits: stable names, not security.
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193) >>> 0;
  let out = "";
  for (let i = 0; i < 5; i++) {
    out += ALPHABET[h % ALPHABET.length];
    h = Math.floor(h / ALPHABET.length) + i * 7919;
  }
  return out;
}

/** getEndpointSlicePrefix: `<name>-` (the name alone if that would be too long). */
const prefixOf = (name: string) => (name.length + 1 <= 253 - 5 ? `${name}-` : name);

function newSlice(
  s: Service,
  t: AddressType,
  ports: EndpointPort[],
  endpoints: Endpoint[],
  key: string,
): EndpointSlice {
  const generateName = prefixOf(s.metadata.name);
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: `${generateName}${suffixOf(`${s.metadata.uid ?? s.metadata.name}/${t}/${key}`)}`,
      namespace: s.metadata.namespace,
      generateName,
      labels: sliceLabels(s),
      ownerReferences: [
        {
          apiVersion: "v1",
          kind: "Service",
          name: s.metadata.name,
          uid: s.metadata.uid ?? "",
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    addressType: t,
    endpoints,
    ports,
  };
}

/** The Service's EndpointSlices over the given pods (any namespace; only its own count). A Service without a
 * selector, or an ExternalName one, has none the controller manages. */
export function computeEndpointSlices(s: Service, pods: readonly EndpointPod[]): EndpointSlice[] {
  const selector = s.spec.selector;
  if (selector === undefined || s.spec.type === "ExternalName") return [];
  const mine = pods
    .filter((p) => p.metadata.namespace === s.metadata.namespace && selects(selector, p.metadata.labels))
    .filter((p) => shouldPodBeInEndpoints(p, true))
    .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
  const out: EndpointSlice[] = [];
  for (const t of addressTypes(s)) {
    // reconcileByAddressType: endpoints grouped by the ports they resolve to (endpointutil.NewPortMapKey).
    const groups = new Map<string, { ports: EndpointPort[]; endpoints: Endpoint[] }>();
    for (const p of mine) {
      const ports = endpointPorts(s, p);
      const ep = podToEndpoint(p, s, t);
      if (ep.addresses.length === 0) continue;
      const key = JSON.stringify(ports);
      const g = groups.get(key) ?? { ports, endpoints: [] };
      g.endpoints.push(ep);
      groups.set(key, g);
    }
    for (const [key, g] of groups)
      for (let i = 0; i < g.endpoints.length; i += MAX_ENDPOINTS_PER_SLICE)
        out.push(newSlice(s, t, g.ports, g.endpoints.slice(i, i + MAX_ENDPOINTS_PER_SLICE), `${key}#${i}`));
  }
  // The placeholder: a selector that matches nothing still has one slice (of the first family), with no
  // endpoints and no ports, so watchers see the Service is handled.
  if (out.length === 0) out.push(newSlice(s, addressTypes(s)[0]!, [], [], "placeholder"));
  return out;
}
