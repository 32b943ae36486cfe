// The Services data plane of the node agent: the nftables proxier (proxy/) and the cluster DNS (dns/), both fed by
// one ServiceSource. Either can be off; each reports whether it is available, so the caller can refuse Services
// (never half-apply them) where the kernel's part cannot be programmed.
import { createAnswerer } from "./dns/answer.js";
import { DnsCache } from "./dns/cache.js";
import { parseUpstream } from "./dns/forward.js";
import { buildIndex, type DnsIndex } from "./dns/records.js";
import { type DnsServer, type DnsServerHealth, startDnsServer } from "./dns/server.js";
import type { DataplaneHold } from "./dataplane-hold.js";
import type { NftRunner } from "./proxy/nft.js";
import { type Proxier, type ProxierHealth, startProxier } from "./proxy/proxier.js";
import type { ServiceSource } from "./types.js";

export interface DataplaneSettings {
  /** The nftables table (inet family); "podsync". */
  table?: string;
  /** PODSYNC_SERVICE_CIDR */
  serviceCIDRs: string[];
  podCIDR?: string | undefined;
  nodeName?: string | undefined;
  /** PODSYNC_CLUSTER_DOMAIN */
  clusterDomain: string;
  /** The cluster DNS: where it listens (PODSYNC_CLUSTER_DNS) and where it forwards (PODSYNC_DNS_UPSTREAM). */
  dns?: { address: string; port?: number; upstreams: string[]; cacheEntries?: number } | undefined;
  /** false: no proxier (DNS only). */
  proxy?: boolean;
  nft?: NftRunner;
}

export interface DataplaneHealth {
  /** The kernel's part is programmed: Services can be accepted. */
  available: boolean;
  proxy?: ProxierHealth;
  dns?: DnsServerHealth & { queries: number; cacheEntries: number };
}

export interface ServiceDataplane {
  health(): DataplaneHealth;
  proxier?: Proxier;
  dns?: DnsServer;
  /** Stops listening and syncing. The table stays (established connections and Service traffic go on across a
   * restart); `podsync services flush` removes it. */
  stop(): Promise<void>;
}

export interface DataplaneStart {
  source: ServiceSource;
  settings: DataplaneSettings;
  log?: (rec: Record<string, unknown>) => void;
  /** The machine's one data plane (dataplane-hold.ts), taken before anything is written or bound; when another
   * node has it, this one starts neither the proxier nor the DNS and says why. */
  hold?: () => Promise<DataplaneHold>;
}

export async function startServiceDataplane(o: DataplaneStart): Promise<ServiceDataplane> {
  const log = o.log ?? (() => undefined);
  const hold = await o.hold?.();
  if (hold && !hold.held) {
    log({ proxier: "unavailable", error: hold.reason });
    const health = { available: false, proxy: { available: false, reason: hold.reason, syncs: 0, failures: 0 } };
    return { health: () => structuredClone(health), stop: async () => {} };
  }
  try {
    return await startPlanes(o, log, async () => hold?.release());
  } catch (e) {
    // A start that failed (a wildcard cluster DNS address) leaves the machine's data plane to the next node.
    await hold?.release();
    throw e;
  }
}

/** The cluster DNS and the proxier, with the machine's hold taken; `release` gives the hold back at stop. */
async function startPlanes(
  o: DataplaneStart,
  log: (rec: Record<string, unknown>) => void,
  release: () => Promise<void>,
): Promise<ServiceDataplane> {
  const s = o.settings;
  let dns: DnsServer | undefined;
  let stats: ReturnType<typeof createAnswerer> | undefined;
  let unsubscribe = () => undefined as unknown;
  if (s.dns) {
    let index: DnsIndex | undefined;
    unsubscribe = o.source.subscribe(() => {
      index = undefined; // rebuilt at the next query
    });
    stats = createAnswerer({
      index: () => (index ??= buildIndex(o.source.snapshot(), s.clusterDomain)),
      upstreams: s.dns.upstreams.map(parseUpstream),
      cache: new DnsCache({ maxEntries: s.dns.cacheEntries ?? 10_000 }),
    });
    if (s.dns.upstreams.length === 0)
      log({ dns: "no upstream", note: "names outside the cluster domain get SERVFAIL (set PODSYNC_DNS_UPSTREAM)" });
    dns = startDnsServer({ address: s.dns.address, port: s.dns.port ?? 53, answerer: stats, log });
  }
  const proxier =
    s.proxy === false
      ? undefined
      : await startProxier({
          source: o.source,
          settings: {
            table: s.table ?? "podsync",
            serviceCIDRs: s.serviceCIDRs,
            podCIDR: s.podCIDR,
            nodeName: s.nodeName,
          },
          ...(s.nft ? { nft: s.nft } : {}),
          log,
        });
  return {
    ...(proxier ? { proxier } : {}),
    ...(dns ? { dns } : {}),
    health() {
      const p = proxier?.health();
      return {
        available: p ? p.available : true,
        ...(p ? { proxy: p } : {}),
        ...(dns && stats
          ? { dns: { ...dns.health(), queries: stats.stats.queries, cacheEntries: stats.cache.size } }
          : {}),
      };
    },
    async stop() {
      unsubscribe();
      await proxier?.stop();
      await dns?.close();
      await release();
    },
  };
}
