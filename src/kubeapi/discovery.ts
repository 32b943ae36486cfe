// /version and API discovery: the legacy documents (/api → APIVersions, /api/v1 → APIResourceList, /apis →
// APIGroupList) and the aggregated form kubectl 1.30+ asks for first
// (`Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`, apidiscovery/v2 types).
// Only what the node serves is listed: the core group's pods (with log and exec), events and nodes, and, where
// the node runs workloads, persistentvolumeclaims and the apps/v1 and batch/v1 workload kinds; all read.

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

/** One group's one version and what it serves ("" is the core group, at /api/v1). */
interface GroupVersion {
  group: string;
  version: string;
  resources: Resource[];
}

const READ = ["get", "list", "watch"];
const workload = (name: string, kind: string, shortNames?: string[], all = true): Resource => ({
  name,
  singularName: kind.toLowerCase(),
  namespaced: true,
  kind,
  verbs: READ,
  ...(shortNames ? { shortNames } : {}),
  ...(all ? { categories: ["all"] } : {}),
});

const CORE: Resource[] = [
  { name: "events", singularName: "event", namespaced: true, kind: "Event", verbs: READ, shortNames: ["ev"] },
  { name: "nodes", singularName: "node", namespaced: false, kind: "Node", verbs: READ, shortNames: ["no"] },
  {
    name: "pods",
    singularName: "pod",
    namespaced: true,
    kind: "Pod",
    verbs: READ,
    shortNames: ["po"],
    categories: ["all"],
  },
  { name: "pods/exec", singularName: "", namespaced: true, kind: "PodExecOptions", verbs: ["create", "get"] },
  {
    name: "pods/portforward",
    singularName: "",
    namespaced: true,
    kind: "PodPortForwardOptions",
    verbs: ["create", "get"],
  },
  { name: "pods/log", singularName: "", namespaced: true, kind: "Pod", verbs: ["get"] },
];
const NAMESPACES: Resource = {
  name: "namespaces",
  singularName: "namespace",
  namespaced: false,
  kind: "Namespace",
  verbs: READ,
  shortNames: ["ns"],
};
/** Served on every node: the reviews `kubectl auth can-i` sends (src/kubeapi/authorization/reviews.ts), and the Metrics API
 * `kubectl top` reads (src/kubeapi/metrics/metrics.ts; metrics-server's group, served here by the node itself). */
const NODE_GROUPS: GroupVersion[] = [
  {
    group: "authorization.k8s.io",
    version: "v1",
    resources: [
      {
        name: "selfsubjectaccessreviews",
        singularName: "selfsubjectaccessreview",
        namespaced: false,
        kind: "SelfSubjectAccessReview",
        verbs: ["create"],
      },
      {
        name: "selfsubjectrulesreviews",
        singularName: "selfsubjectrulesreview",
        namespaced: false,
        kind: "SelfSubjectRulesReview",
        verbs: ["create"],
      },
    ],
  },
  {
    group: "metrics.k8s.io",
    version: "v1beta1",
    resources: [
      { name: "nodes", singularName: "", namespaced: false, kind: "NodeMetrics", verbs: ["get", "list"] },
      { name: "pods", singularName: "", namespaced: true, kind: "PodMetrics", verbs: ["get", "list"] },
    ],
  },
];
const CLAIMS = workload("persistentvolumeclaims", "PersistentVolumeClaim", ["pvc"], false);
/** Services and their endpoints (src/services/), served where the node runs workloads. */
const SERVICES = workload("services", "Service", ["svc"]);
const ENDPOINTS = workload("endpoints", "Endpoints", ["ep"], false);
const DISCOVERY_GROUP: GroupVersion = {
  group: "discovery.k8s.io",
  version: "v1",
  resources: [workload("endpointslices", "EndpointSlice", undefined, false)],
};
const RCS = workload("replicationcontrollers", "ReplicationController", ["rc"]);

/** The workload kinds' groups (served when the node runs workloads: src/controllers/). */
const WORKLOAD_GROUPS: GroupVersion[] = [
  {
    group: "apps",
    version: "v1",
    resources: [
      workload("daemonsets", "DaemonSet", ["ds"]),
      workload("deployments", "Deployment", ["deploy"]),
      workload("replicasets", "ReplicaSet", ["rs"]),
      workload("statefulsets", "StatefulSet", ["sts"]),
    ],
  },
  { group: "batch", version: "v1", resources: [workload("cronjobs", "CronJob", ["cj"]), workload("jobs", "Job")] },
  {
    group: "autoscaling",
    version: "v2",
    resources: [workload("horizontalpodautoscalers", "HorizontalPodAutoscaler", ["hpa"], false)],
  },
  {
    group: "policy",
    version: "v1",
    resources: [workload("poddisruptionbudgets", "PodDisruptionBudget", ["pdb"], false)],
  },
];

/** What a node serves: the core group (with claims when it runs workloads), and the workloads' groups. */
export function served(workloads: boolean): { core: GroupVersion; groups: GroupVersion[] } {
  return {
    core: {
      group: "",
      version: "v1",
      resources: [
        ...(workloads ? [ENDPOINTS, ...CORE.slice(0, 2), CLAIMS, ...CORE.slice(2), RCS, SERVICES] : CORE),
        NAMESPACES,
      ],
    },
    groups: [...(workloads ? [...WORKLOAD_GROUPS, DISCOVERY_GROUP] : []), ...NODE_GROUPS],
  };
}

/** What the node serves, per group, for the authorization reviews (src/kubeapi/authorization/reviews.ts). */
export const reviewable = (s: ReturnType<typeof served>) => ({ groups: [s.core, ...s.groups] });

export const apiVersions = (serverAddress: string) => ({
  kind: "APIVersions",
  versions: ["v1"],
  serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
});

/** /api/v1 or /apis/<group>/<version>: the APIResourceList. */
export const apiResourceList = (gv: GroupVersion) => ({
  kind: "APIResourceList",
  ...(gv.group ? { apiVersion: "v1" } : {}),
  groupVersion: gv.group ? `${gv.group}/${gv.version}` : gv.version,
  resources: gv.resources.map((r) => ({
    name: r.name,
    singularName: r.singularName,
    namespaced: r.namespaced,
    kind: r.kind,
    verbs: r.verbs,
    ...(r.shortNames ? { shortNames: r.shortNames } : {}),
    ...(r.categories ? { categories: r.categories } : {}),
  })),
});

const groupEntry = (gv: GroupVersion) => {
  const v = { groupVersion: `${gv.group}/${gv.version}`, version: gv.version };
  return { name: gv.group, versions: [v], preferredVersion: v };
};

/** /apis: the APIGroupList; /apis/<group>: one APIGroup. */
export const apiGroupList = (groups: readonly GroupVersion[]) => ({
  kind: "APIGroupList",
  apiVersion: "v1",
  groups: groups.map(groupEntry),
});
export const apiGroup = (gv: GroupVersion) => ({ kind: "APIGroup", apiVersion: "v1", ...groupEntry(gv) });

export const AGGREGATED_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/** The client takes the aggregated v2 form (it lists it in Accept before plain JSON). */
export function wantsAggregated(accept: string | undefined): boolean {
  return (accept ?? "").split(",").some((part) => {
    const params = part.split(";").map((p) => p.trim());
    return (
      params.includes("g=apidiscovery.k8s.io") && params.includes("v=v2") && params.includes("as=APIGroupDiscoveryList")
    );
  });
}

/** One group's entry in the aggregated form (apidiscovery/v2 APIGroupDiscovery). */
function discoveryEntry(gv: GroupVersion) {
  const top = gv.resources.filter((r) => !r.name.includes("/"));
  return {
    metadata: gv.group ? { name: gv.group, creationTimestamp: null } : { creationTimestamp: null },
    versions: [
      {
        version: gv.version,
        resources: top.map((r) => {
          const subs = gv.resources.filter((s) => s.name.startsWith(`${r.name}/`));
          return {
            resource: r.name,
            responseKind: { group: gv.group, version: gv.version, kind: r.kind },
            scope: r.namespaced ? "Namespaced" : "Cluster",
            singularResource: r.singularName,
            verbs: r.verbs,
            ...(r.shortNames ? { shortNames: r.shortNames } : {}),
            ...(r.categories ? { categories: r.categories } : {}),
            ...(subs.length
              ? {
                  subresources: subs.map((s) => ({
                    subresource: s.name.slice(r.name.length + 1),
                    responseKind: { group: gv.group, version: gv.version, kind: s.kind },
                    verbs: s.verbs,
                  })),
                }
              : {}),
          };
        }),
        freshness: "Current",
      },
    ],
  };
}

/** /api in the aggregated form: the core group (no name) with its one version; /apis: the other groups. */
export function aggregatedDiscovery(gvs: readonly GroupVersion[]) {
  return {
    kind: "APIGroupDiscoveryList",
    apiVersion: "apidiscovery.k8s.io/v2",
    metadata: {},
    items: gvs.map(discoveryEntry),
  };
}
