// Package services/ — the Services data plane's inputs: the subset of v1.Service and discovery.k8s.io/v1
// EndpointSlice the nftables proxier (proxy/) and the cluster DNS (dns/) read, with upstream's JSON field names, and
// the port they read them through. Structural on purpose: the Service model (zod, intake, allocation, the
// EndpointSlice computation) satisfies these shapes without either side importing the other.
// Imports nothing; imported by services/proxy, services/dns and the entry points.

export type Protocol = "TCP" | "UDP" | "SCTP";

/** v1.ServicePort (the fields the data plane uses). */
export interface ServicePort {
  name?: string | undefined;
  protocol?: Protocol | undefined;
  port: number;
  targetPort?: number | string | undefined;
  nodePort?: number | undefined;
}

/** v1.Service (the fields the data plane uses). Allocation has happened: clusterIP(s) and nodePorts are set. */
export interface Service {
  metadata: { name: string; namespace: string };
  spec: {
    type?: "ClusterIP" | "NodePort" | "LoadBalancer" | "ExternalName" | undefined;
    /** "None" for a headless Service. */
    clusterIP?: string | undefined;
    clusterIPs?: string[] | undefined;
    ports?: ServicePort[] | undefined;
    sessionAffinity?: "None" | "ClientIP" | undefined;
    sessionAffinityConfig?: { clientIP?: { timeoutSeconds?: number | undefined } | undefined } | undefined;
    externalName?: string | undefined;
    publishNotReadyAddresses?: boolean | undefined;
    externalTrafficPolicy?: "Cluster" | "Local" | undefined;
    internalTrafficPolicy?: "Cluster" | "Local" | undefined;
  };
}

/** discovery.k8s.io/v1 EndpointConditions; unset means unknown, read as upstream reads it (ready when unset). */
export interface EndpointConditions {
  ready?: boolean | undefined;
  serving?: boolean | undefined;
  terminating?: boolean | undefined;
}

/** discovery.k8s.io/v1 Endpoint (the fields the data plane uses). */
export interface Endpoint {
  addresses: string[];
  conditions?: EndpointConditions | undefined;
  hostname?: string | undefined;
  nodeName?: string | undefined;
  targetRef?: { kind?: string | undefined; name?: string | undefined; namespace?: string | undefined } | undefined;
}

/** discovery.k8s.io/v1 EndpointPort. */
export interface EndpointPort {
  name?: string | undefined;
  port?: number | undefined;
  protocol?: Protocol | undefined;
}

/** The label naming the Service an EndpointSlice belongs to (discovery.k8s.io/v1 LabelServiceName). */
export const LABEL_SERVICE_NAME = "kubernetes.io/service-name";

/** discovery.k8s.io/v1 EndpointSlice (the fields the data plane uses). */
export interface EndpointSlice {
  metadata: { name?: string | undefined; namespace: string; labels?: Record<string, string> | undefined };
  addressType: "IPv4" | "IPv6" | "FQDN";
  endpoints: Endpoint[];
  ports?: EndpointPort[] | null | undefined;
}

export interface ServiceSnapshot {
  services: readonly Service[];
  endpointSlices: readonly EndpointSlice[];
}

/** Where the data plane reads Services and EndpointSlices: the whole state now, and a call when it changes. */
export interface ServiceSource {
  snapshot(): ServiceSnapshot;
  /** onChange is called after any change (no payload: read snapshot()). Returns the unsubscribe. */
  subscribe(onChange: () => void): () => void;
  /** false while the source does not hold the whole state yet (a node starting: its pods not relisted). The
   * proxier writes nothing until it does, as kube-proxy's syncProxyRules waits for its informers (isInitialized),
   * so a restart never empties the table for a moment. Absent: always synced. */
  synced?(): boolean;
}

/** A ServiceSource held in memory: what tests, the bench and a node without the Service model use. */
export function memoryServiceSource(
  initial: Partial<ServiceSnapshot> = {},
  o: { pending?: boolean } = {},
): ServiceSource & {
  set(next: Partial<ServiceSnapshot>): void;
} {
  let state: ServiceSnapshot = { services: initial.services ?? [], endpointSlices: initial.endpointSlices ?? [] };
  const listeners = new Set<() => void>();
  // pending: not synced until the first set().
  let synced = !o.pending;
  return {
    snapshot: () => state,
    synced: () => synced,
    subscribe(onChange) {
      listeners.add(onChange);
      return () => listeners.delete(onChange);
    },
    set(next) {
      state = { ...state, ...next };
      synced = true;
      for (const l of [...listeners]) l();
    },
  };
}
