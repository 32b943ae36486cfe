// The EndpointSlice and Endpoints hubs of the Kubernetes API, fed from the node's service source
// (src/services/source.ts) after each change of its snapshot. Each object keeps the creationTimestamp of when
// it first appeared (the source makes them anew each pass). Nothing here makes a runtime call.
import type { EndpointSlice } from "../../services/endpointslice/slices.js";
import type { V1Endpoints } from "../../services/endpointslice/endpoints.js";
import type { ServiceSource } from "../../services/source.js";
import { WatchHub, type RvClock } from "../watch-hub.js";

type Stamped<T extends { metadata: object }> = T & { metadata: T["metadata"] & { creationTimestamp: string } };
export type V1EndpointSliceObject = Stamped<EndpointSlice>;
export type V1EndpointsObject = Stamped<V1Endpoints>;

export interface EndpointsFeed {
  slices: WatchHub<V1EndpointSliceObject>;
  endpoints: WatchHub<V1EndpointsObject>;
  /** Bring the hubs up to the source (a list or get calls it first). */
  load(): Promise<void>;
}

const keyOf = (o: { metadata: { namespace: string; name: string } }) => `${o.metadata.namespace}/${o.metadata.name}`;

export function createEndpointsFeed(
  clock: RvClock,
  source: ServiceSource,
  now: () => number = Date.now,
): EndpointsFeed {
  const slices = new WatchHub<V1EndpointSliceObject>(clock, { key: keyOf });
  const endpoints = new WatchHub<V1EndpointsObject>(clock, { key: keyOf });
  const born = new Map<string, string>();
  const stamp = <T extends EndpointSlice | V1Endpoints>(kind: string, o: T): Stamped<T> => {
    const k = `${kind}/${keyOf(o)}`;
    let t = born.get(k);
    if (t === undefined) born.set(k, (t = new Date(now()).toISOString()));
    return { ...o, metadata: { ...o.metadata, creationTimestamp: t } } as Stamped<T>;
  };
  const feed = () => {
    const s = source.snapshot();
    const live = new Set<string>();
    const sl = s.endpointSlices.map((x) => (live.add(`S/${keyOf(x)}`), stamp("S", x)));
    const ep = s.endpoints.map((x) => (live.add(`E/${keyOf(x)}`), stamp("E", x)));
    for (const k of [...born.keys()]) if (!live.has(k)) born.delete(k);
    slices.replaceAll(sl);
    endpoints.replaceAll(ep);
  };
  source.subscribe(feed);
  feed();
  return {
    slices,
    endpoints,
    load: async () => {
      await source.refresh();
      feed();
    },
  };
}
