// /version and API discovery: the legacy documents (/api → APIVersions, /api/v1 → APIResourceList, /apis →
// APIGroupList) and the aggregated form kubectl 1.30+ asks for first
// (`Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`, apidiscovery/v2 types).
// Only what the node serves is listed: the core group's pods (with log and exec), events and nodes, all read.

/** The Kubernetes line podsync follows (kubelet's behaviour is ported from it). */
export const KUBE_MAJOR = "1";
export const KUBE_MINOR = "33";
export const KUBE_GIT_VERSION = "v1.33.0";

/** version.Info, plus podsync's own version in a field the Kubernetes type does not have. */
export function versionInfo(podsyncVersion: string, arch: string) {
  return {
    major: KUBE_MAJOR,
    minor: KUBE_MINOR,
    gitVersion: KUBE_GIT_VERSION,
    gitCommit: "",
    gitTreeState: "",
    buildDate: "",
    goVersion: "",
    compiler: "",
    platform: `linux/${arch}`,
    podsync: podsyncVersion,
  };
}

interface Resource {
  name: string;
  singularName: string;
  namespaced: boolean;
  kind: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
}

const READ = ["get", "list", "watch"];
const RESOURCES: Resource[] = [
  { name: "events", singularName: "event", namespaced: true, kind: "Event", verbs: READ, shortNames: ["ev"] },
  { name: "nodes", singularName: "node", namespaced: false, kind: "Node", verbs: READ, shortNames: ["no"] },
  { name: "pods", singularName: "pod", namespaced: true, kind: "Pod", verbs: READ, shortNames: ["po"], categories: ["all"] },
  { name: "pods/exec", singularName: "", namespaced: true, kind: "PodExecOptions", verbs: ["create", "get"] },
  { name: "pods/log", singularName: "", namespaced: true, kind: "Pod", verbs: ["get"] },
];

/** The resources (and subresources) the core group serves, by plural name. */
export const SERVED = new Set(RESOURCES.map((r) => r.name));

export const apiVersions = (serverAddress: string) => ({
  kind: "APIVersions",
  versions: ["v1"],
  serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
});

export const apiResourceList = () => ({
  kind: "APIResourceList",
  groupVersion: "v1",
  resources: RESOURCES.map((r) => ({
    name: r.name,
    singularName: r.singularName,
    namespaced: r.namespaced,
    kind: r.kind,
    verbs: r.verbs,
    ...(r.shortNames ? { shortNames: r.shortNames } : {}),
    ...(r.categories ? { categories: r.categories } : {}),
  })),
});

export const apiGroupList = () => ({ kind: "APIGroupList", apiVersion: "v1", groups: [] as unknown[] });

export const AGGREGATED_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/** The client takes the aggregated v2 form (it lists it in Accept before plain JSON). */
export function wantsAggregated(accept: string | undefined): boolean {
  return (accept ?? "").split(",").some((part) => {
    const params = part.split(";").map((p) => p.trim());
    return params.includes("g=apidiscovery.k8s.io") && params.includes("v=v2") && params.includes("as=APIGroupDiscoveryList");
  });
}

/** /api in the aggregated form: the core group (no name) with its one version; /apis: no groups. */
export function aggregatedDiscovery(core: boolean) {
  const top = RESOURCES.filter((r) => !r.name.includes("/"));
  return {
    kind: "APIGroupDiscoveryList",
    apiVersion: "apidiscovery.k8s.io/v2",
    metadata: {},
    items: core
      ? [
          {
            metadata: { creationTimestamp: null },
            versions: [
              {
                version: "v1",
                resources: top.map((r) => ({
                  resource: r.name,
                  responseKind: { group: "", version: "v1", kind: r.kind },
                  scope: r.namespaced ? "Namespaced" : "Cluster",
                  singularResource: r.singularName,
                  verbs: r.verbs,
                  ...(r.shortNames ? { shortNames: r.shortNames } : {}),
                  ...(r.categories ? { categories: r.categories } : {}),
                  ...(r.name === "pods"
                    ? {
                        subresources: RESOURCES.filter((s) => s.name.startsWith("pods/")).map((s) => ({
                          subresource: s.name.slice("pods/".length),
                          responseKind: { group: "", version: "v1", kind: s.kind },
                          verbs: s.verbs,
                        })),
                      }
                    : {}),
                })),
                freshness: "Current",
              },
            ],
          },
        ]
      : [],
  };
}
