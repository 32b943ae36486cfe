// The node's Services: the data plane (PODSYNC_SERVICE_DATAPLANE: the nftables proxier and the cluster DNS) and
// the Service model (src/services/source.ts) that the data plane, the env vars and the Kubernetes API read.
import type { CriClient } from "../cri/client.js";
import type { EndpointsFeed } from "../kubeapi/kinds/endpoints-feed.js";
import { createEndpointsFeed } from "../kubeapi/kinds/endpoints-feed.js";
import type { WorkloadFeed } from "../kubeapi/kinds/workload-feed.js";
import type { RvClock, WatchHub } from "../kubeapi/watch-hub.js";
import type { Service } from "../pod/workloads/service.js";
import { createServiceSource, type ServiceSource } from "../services/source.js";
import { memoryServiceSource } from "../services/types.js";
import type { Settings } from "../settings/node.js";
import type { V1Pod } from "../status/api-status.js";
import { jsonLog } from "./config.js";

/** The data plane, when wanted (PODSYNC_SERVICE_DATAPLANE=auto, the default, as root; or on): pods get its cluster
 * DNS as their nameserver (the bridge's gateway unless PODSYNC_CLUSTER_DNS says otherwise). Its source is pending
 * until the Service model hands it the first snapshot after the pods' first relist. */
export async function startServicesDataplane(s: Settings, cri: CriClient, quiet: boolean) {
  const source = memoryServiceSource({}, { pending: true });
  const mode = s.PODSYNC_SERVICE_DATAPLANE;
  if (mode === "off") return { source, dataplane: undefined, servicesRefusal: undefined };
  // The proxier, the DNS server and dns-packet are loaded only where the data plane may run (1.6 MiB of heap).
  const { servicesRefusalFor, startNodeDataplane } = await import("../services/node-dataplane.js");
  const wanted = mode === "on" || (mode === "auto" && process.getuid?.() === 0);
  const dataplane = wanted
    ? await startNodeDataplane({
        source,
        serviceCIDRs: [s.PODSYNC_SERVICE_CIDR.text],
        cniConfDir: s.PODSYNC_CNI_CONF_DIR,
        runtimeStatusInfo: async () => (await cri.status({ verbose: true })).info,
        clusterDNS: s.PODSYNC_CLUSTER_DNS,
        clusterDomain: s.PODSYNC_CLUSTER_DOMAIN,
        upstreams: s.PODSYNC_DNS_UPSTREAM,
        nodeName: s.PODSYNC_NODE_NAME,
        log: jsonLog(quiet, "services"),
      })
    : undefined;
  // Services are refused, never half-applied, where the data plane was wanted and cannot run (issue #37); with
  // PODSYNC_SERVICE_DATAPLANE=off the owner chose Services without kernel rules or DNS (docs/services-dataplane.md).
  const servicesRefusal = servicesRefusalFor(mode, dataplane?.dataplane, s.PODSYNC_SERVICE_CIDR.text);
  return { source, dataplane, servicesRefusal };
}
export type ServicesDataplane = Awaited<ReturnType<typeof startServicesDataplane>>;

/** The Services (stored with the workloads) and the node's pods make the EndpointSlices; the data plane (when it
 * runs) is handed each snapshot, and the Kubernetes API reads Endpoints and EndpointSlices from their feed. */
export function startServiceModel(
  clock: RvClock,
  workloadFeed: WorkloadFeed,
  podsHub: WatchHub<V1Pod>,
  plane: ServicesDataplane,
  quiet: boolean,
): { services: ServiceSource; endpointsFeed: EndpointsFeed; podsRelisted: () => void } {
  const log = jsonLog(quiet, "services");
  const services = createServiceSource({
    services: {
      list: async () =>
        (await workloadFeed.store.list()).map((w) => w.workload).filter((w): w is Service => w.kind === "Service"),
      subscribe: (cb) => workloadFeed.hubs.Service.watch({ since: undefined, filter: () => true, send: cb }),
    },
    pods: {
      list: () => podsHub.list(),
      subscribe: (cb) => podsHub.watch({ since: undefined, filter: () => true, send: cb }),
    },
    onError: (e) => log({ error: String((e as Error)?.message ?? e) }),
  });
  void services.refresh();
  // The data plane is fed once the pods were relisted (before, every Service would look endpoint-less).
  let relisted = false;
  const feed = () => relisted && plane.source.set(services.snapshot());
  if (plane.dataplane) services.subscribe(feed);
  const podsRelisted = () => {
    if (relisted || !plane.dataplane) return;
    void services
      .refresh()
      .catch(() => undefined)
      .then(() => ((relisted = true), feed()));
  };
  return { services, endpointsFeed: createEndpointsFeed(clock, services), podsRelisted };
}
