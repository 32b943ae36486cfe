// The Table columns and cells of Services, EndpointSlices and Endpoints, as the API server makes them for kubectl
// (pkg/printers/internalversion/printers.go: serviceColumnDefinitions/printService with getServiceExternalIP and
// makePortString; endpointSliceColumnDefinitions/printEndpointSlice with formatDiscoveryPorts,
// formatDiscoveryEndpoints and listWithMoreString; endpointColumnDefinitions/printEndpoints with formatEndpoints).
// SELECTOR is the wide column (priority 1) of Services.
import type { EndpointSlice } from "../../services/endpointslice/slices.js";
import type { V1Endpoints } from "../../services/endpointslice/endpoints.js";
import { humanDuration, type TableColumn } from "../table.js";

const col = (name: string, description: string, o: { priority?: number; format?: string } = {}): TableColumn => ({
  name,
  type: "string",
  format: o.format ?? "",
  description,
  priority: o.priority ?? 0,
});
const NAME = col("Name", "Name must be unique within a namespace.", { format: "name" });
const AGE = col("Age", "CreationTimestamp is a timestamp representing the server time when this object was created.");

export const SERVICE_COLUMNS: TableColumn[] = [
  NAME,
  col("Type", "type determines how the Service is exposed."),
  col("Cluster-IP", "clusterIP is the IP address of the service and is usually assigned randomly."),
  col(
    "External-IP",
    "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
  ),
  col("Port(s)", "The list of ports that are exposed by this service."),
  AGE,
  col("Selector", "Route service traffic to pods with label keys and values matching this selector.", { priority: 1 }),
];

export const ENDPOINT_SLICE_COLUMNS: TableColumn[] = [
  NAME,
  col("AddressType", "addressType specifies the type of address carried by this EndpointSlice."),
  col("Ports", "ports specifies the list of network ports exposed by each endpoint in this slice."),
  col("Endpoints", "endpoints is a list of unique endpoints in this slice."),
  AGE,
];

export const ENDPOINTS_COLUMNS: TableColumn[] = [
  NAME,
  col("Endpoints", "Endpoints is the list of endpoints (address:port) in the object."),
  AGE,
];

const since = (t: string | null | undefined, now: number) => (t ? humanDuration(now - Date.parse(t)) : "<unknown>");

interface ServiceView {
  metadata: { name: string; creationTimestamp?: string | null };
  spec: Record<string, unknown>;
}

/** labels.FormatLabels: k=v,... sorted; "<none>" when empty. */
function formatLabels(m: Record<string, string> | undefined): string {
  const e = Object.entries(m ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return e.length ? e.map(([k, v]) => `${k}=${v}`).join(",") : "<none>";
}

/** printService: every column, the wide SELECTOR too (the server prints wide; kubectl hides priority 1). */
export function serviceCells(o: ServiceView, now: number): string[] {
  const spec = o.spec as {
    type?: string;
    externalName?: string;
    clusterIPs?: string[];
    selector?: Record<string, string>;
    ports?: { port: number; nodePort?: number; protocol: string }[];
  };
  const ports = (spec.ports ?? [])
    .map((p) => (p.nodePort ? `${p.port}:${p.nodePort}/${p.protocol}` : `${p.port}/${p.protocol}`))
    .join(",");
  const external =
    spec.type === "ExternalName"
      ? String(spec.externalName ?? "")
      : spec.type === "LoadBalancer"
        ? "<pending>"
        : "<none>";
  return [
    o.metadata.name,
    String(spec.type ?? "ClusterIP"),
    spec.clusterIPs?.[0] ?? "<none>",
    external,
    ports || "<none>",
    since(o.metadata.creationTimestamp, now),
    formatLabels(spec.selector),
  ];
}

/** listWithMoreString: the first three, then "+ N more...". */
function listWithMore(list: string[], count: number, empty: string): string {
  const max = 3;
  const shown = list.slice(0, max).join(",");
  if (count > max) return `${shown} + ${count - max} more...`;
  return shown === "" ? empty : shown;
}

export function endpointSliceCells(o: EndpointSlice & { metadata: { creationTimestamp?: string } }, now: number) {
  const ports = o.ports.map((p) => String(p.port ?? p.name ?? "*"));
  const addresses = o.endpoints.flatMap((e) => e.addresses);
  return [
    o.metadata.name,
    o.addressType,
    listWithMore(ports, ports.length, "<unset>"),
    listWithMore(addresses, addresses.length, "<unset>"),
    since(o.metadata.creationTimestamp, now),
  ];
}

const hostPort = (ip: string, port: number) => (ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`);

/** formatEndpoints: ready addresses with each port (headless without ports: the addresses). */
export function endpointsCells(o: V1Endpoints & { metadata: { creationTimestamp?: string } }, now: number) {
  const list: string[] = [];
  let count = 0;
  for (const ss of o.subsets) {
    const addrs = ss.addresses ?? [];
    if (!ss.ports?.length) {
      count += addrs.length;
      list.push(...addrs.map((a) => a.ip));
    } else
      for (const p of ss.ports) {
        count += addrs.length;
        list.push(...addrs.map((a) => hostPort(a.ip, p.port)));
      }
  }
  return [
    o.metadata.name,
    o.subsets.length ? listWithMore(list, count, "") : "<none>",
    since(o.metadata.creationTimestamp, now),
  ];
}
