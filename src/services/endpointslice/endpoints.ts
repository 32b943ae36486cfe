// v1 Endpoints, derived from a Service's EndpointSlices, for `kubectl get endpoints` and `describe svc` on
// clients that still read them. Upstream's endpoints controller (pkg/controller/endpoint/endpoints_controller.go
// syncService) builds them from the pods: a ready endpoint is an address, a not-ready one a notReadyAddress
// (terminating pods are left out unless publishNotReadyAddresses, ShouldPodBeInEndpoints), and
// endpoints.RepackSubsets groups addresses by their port set. The slices already hold exactly that, so the same
// subsets come from them.
import type { Service } from "../../pod/workloads/service.js";
import { isServiceIPSet } from "../../pod/workloads/service.js";
import { LABEL_HEADLESS, type Endpoint, type EndpointSlice } from "./slices.js";

export interface EndpointAddress {
  ip: string;
  hostname?: string;
  nodeName?: string;
  targetRef: Endpoint["targetRef"];
}

export interface V1Endpoints {
  apiVersion: "v1";
  kind: "Endpoints";
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  subsets: {
    addresses?: EndpointAddress[];
    notReadyAddresses?: EndpointAddress[];
    ports?: { name?: string; port: number; protocol: string; appProtocol?: string }[];
  }[];
}

const byIp = (a: EndpointAddress, b: EndpointAddress) => (a.ip < b.ip ? -1 : a.ip > b.ip ? 1 : 0);

/** The Service's v1 Endpoints from its slices; undefined for a Service the controller does not manage (no
 * selector, ExternalName), which has none. */
export function endpointsFromSlices(s: Service, slices: readonly EndpointSlice[]): V1Endpoints | undefined {
  if (s.spec.selector === undefined || s.spec.type === "ExternalName") return undefined;
  const publish = s.spec.publishNotReadyAddresses ?? false;
  const subsets = new Map<
    string,
    { ready: EndpointAddress[]; notReady: EndpointAddress[]; ports: V1Endpoints["subsets"][number]["ports"] }
  >();
  for (const slice of slices) {
    // Endpoints carry one family: the Service's first (the endpoints controller's choice for dual-stack).
    if (slice.addressType !== slices[0]?.addressType) continue;
    const key = JSON.stringify(slice.ports);
    const g = subsets.get(key) ?? {
      ready: [],
      notReady: [],
      ports: slice.ports.map((p) => ({
        ...(p.name ? { name: p.name } : {}),
        port: p.port,
        protocol: p.protocol,
        ...(p.appProtocol ? { appProtocol: p.appProtocol } : {}),
      })),
    };
    for (const ep of slice.endpoints) {
      if (ep.conditions.terminating && !publish) continue;
      for (const ip of ep.addresses) {
        const a: EndpointAddress = {
          ip,
          ...(ep.hostname ? { hostname: ep.hostname } : {}),
          ...(ep.nodeName ? { nodeName: ep.nodeName } : {}),
          targetRef: ep.targetRef,
        };
        (ep.conditions.ready ? g.ready : g.notReady).push(a);
      }
    }
    subsets.set(key, g);
  }
  const labels: Record<string, string> = { ...(s.metadata.labels ?? {}) };
  if (!isServiceIPSet(s)) labels[LABEL_HEADLESS] = "";
  else delete labels[LABEL_HEADLESS];
  return {
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: {
      name: s.metadata.name,
      namespace: s.metadata.namespace,
      ...(Object.keys(labels).length ? { labels } : {}),
    },
    subsets: [...subsets.values()]
      .filter((g) => g.ready.length || g.notReady.length)
      .map((g) => ({
        ...(g.ready.length ? { addresses: g.ready.sort(byIp) } : {}),
        ...(g.notReady.length ? { notReadyAddresses: g.notReady.sort(byIp) } : {}),
        ...(g.ports?.length ? { ports: g.ports } : {}),
      })),
  };
}
