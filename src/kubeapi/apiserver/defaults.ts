// The defaults the API server applies to every object it serves (the defaulting funcs generated from
// pkg/apis/core/v1/defaults.go, pkg/apis/apps/v1/defaults.go and pkg/apis/batch/v1/defaults.go SetDefaults_*),
// applied to the objects the node's Kubernetes API serves, so clients read what they read from a cluster: a
// pod's `securityContext: {}` (kubectl debug 1.33 reads it without a nil check), a Deployment's
// strategy.rollingUpdate 25%/25%, and the rest. Applied on the way out; the stored objects are as sent. Pure.
//
// Not applied: what admission plugins add on a cluster (priority, serviceAccountName, default tolerations).
// Taken away: an env var's `value: ""` (podsync's model defaults value to ""; upstream's EnvVar.Value is
// `omitempty`, so none is written, beside a `valueFrom` or not).
// biome-ignore lint/suspicious/noExplicitAny: a served object is open JSON, read and defaulted field by field
type Obj = Record<string, any>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const setIfUnset = (o: Obj, key: string, v: unknown) => {
  if (o[key] === undefined || o[key] === null || o[key] === "") o[key] = v;
};

/** SetDefaults_Container's imagePullPolicy: Always for `:latest` or no tag, else IfNotPresent. */
export function defaultPullPolicy(image: string): "Always" | "IfNotPresent" {
  if (image.includes("@")) return "IfNotPresent";
  const last = image.slice(image.lastIndexOf("/") + 1);
  const colon = last.lastIndexOf(":");
  return colon < 0 || last.slice(colon + 1) === "latest" ? "Always" : "IfNotPresent";
}

/** SetDefaults_Probe and SetDefaults_HTTPGetAction. */
function probe(p: unknown): void {
  if (!isObj(p)) return;
  setIfUnset(p, "timeoutSeconds", 1);
  setIfUnset(p, "periodSeconds", 10);
  setIfUnset(p, "successThreshold", 1);
  setIfUnset(p, "failureThreshold", 3);
  handler(p);
}
function handler(h: unknown): void {
  if (!isObj(h)) return;
  if (isObj(h["httpGet"])) {
    setIfUnset(h["httpGet"], "path", "/");
    setIfUnset(h["httpGet"], "scheme", "HTTP");
  }
}

/** SetDefaults_ObjectFieldSelector: apiVersion v1. The env var's `value: ""` beside a valueFrom is dropped. */
function env(list: unknown): unknown {
  if (!Array.isArray(list)) return list;
  return list.map((e: Obj) => {
    if (!isObj(e)) return e;
    const out: Obj = { ...e };
    // EnvVar.Value is `omitempty`: an empty value is not written, beside a valueFrom or not.
    if (out["value"] === "") delete out["value"];
    if (isObj(out["valueFrom"]?.fieldRef)) setIfUnset(out["valueFrom"].fieldRef, "apiVersion", "v1");
    return out;
  });
}

/** SetDefaults_Container (with its ports' and probes' defaults); hostNetwork: hostPort = containerPort. */
function container(c: Obj, hostNetwork: boolean): Obj {
  const out: Obj = structuredClone(c);
  setIfUnset(out, "terminationMessagePath", "/dev/termination-log");
  setIfUnset(out, "terminationMessagePolicy", "File");
  if (typeof out["image"] === "string") setIfUnset(out, "imagePullPolicy", defaultPullPolicy(out["image"]));
  if (out["resources"] === undefined) out["resources"] = {};
  // SetDefaults_Pod: a container's limits stand in for the requests it did not make.
  const r = out["resources"];
  if (isObj(r) && isObj(r["limits"])) {
    r["requests"] = { ...r["limits"], ...(isObj(r["requests"]) ? r["requests"] : {}) };
  }
  if (Array.isArray(out["ports"]))
    out["ports"] = out["ports"].map((p: Obj) => {
      const q: Obj = { ...p };
      setIfUnset(q, "protocol", "TCP");
      if (hostNetwork) setIfUnset(q, "hostPort", q["containerPort"]);
      return q;
    });
  if (out["env"] !== undefined) out["env"] = env(out["env"]);
  probe(out["livenessProbe"]);
  probe(out["readinessProbe"]);
  probe(out["startupProbe"]);
  if (isObj(out["lifecycle"])) {
    handler(out["lifecycle"]["postStart"]);
    handler(out["lifecycle"]["preStop"]);
  }
  return out;
}

const MODE_0644 = 420;
/** SetDefaults_Volume (no source: an emptyDir) and the sources' defaultMode 0644. */
function volume(v: Obj): Obj {
  const out: Obj = structuredClone(v);
  const sources = Object.keys(out).filter((k) => k !== "name");
  if (sources.length === 0) out["emptyDir"] = {};
  for (const k of ["secret", "configMap", "downwardAPI", "projected"])
    if (isObj(out[k])) setIfUnset(out[k], "defaultMode", MODE_0644);
  if (isObj(out["hostPath"]) && out["hostPath"]["type"] === undefined) out["hostPath"]["type"] = "";
  if (isObj(out["downwardAPI"]) && Array.isArray(out["downwardAPI"]["items"]))
    for (const i of out["downwardAPI"]["items"]) if (isObj(i?.fieldRef)) setIfUnset(i.fieldRef, "apiVersion", "v1");
  return out;
}

/** SetDefaults_PodSpec and what the pod's parts default to. */
export function defaultPodSpec(spec: Obj): Obj {
  const out: Obj = { ...spec };
  setIfUnset(out, "dnsPolicy", "ClusterFirst");
  setIfUnset(out, "restartPolicy", "Always");
  if (out["securityContext"] === undefined || out["securityContext"] === null) out["securityContext"] = {};
  if (out["terminationGracePeriodSeconds"] === undefined || out["terminationGracePeriodSeconds"] === null)
    out["terminationGracePeriodSeconds"] = 30;
  setIfUnset(out, "schedulerName", "default-scheduler");
  if (out["enableServiceLinks"] === undefined) out["enableServiceLinks"] = true;
  const hostNetwork = out["hostNetwork"] === true;
  for (const k of ["containers", "initContainers", "ephemeralContainers"])
    if (Array.isArray(out[k])) out[k] = out[k].map((c: Obj) => container(c, hostNetwork));
  if (Array.isArray(out["volumes"])) out["volumes"] = out["volumes"].map(volume);
  return out;
}

/** A pod template's spec defaulted (workloads' spec.template). */
const template = (t: unknown): unknown =>
  isObj(t) && isObj(t["spec"]) ? { ...t, spec: defaultPodSpec(t["spec"]) } : t;

/** SetDefaults_PersistentVolumeClaimSpec (volumeMode Filesystem) and SetDefaults_PersistentVolumeClaim. */
function claim(c: Obj): Obj {
  const spec = isObj(c["spec"]) ? { ...c["spec"] } : {};
  setIfUnset(spec, "volumeMode", "Filesystem");
  const status = isObj(c["status"]) ? { ...c["status"] } : {};
  setIfUnset(status, "phase", "Pending");
  return { ...c, spec, status };
}

/** The workload kinds' SetDefaults_* (apps/v1, batch/v1, core/v1 claims); other kinds as they are. */
export function defaultWorkload<T extends { kind: string; spec?: Obj; metadata: Obj }>(w: T): T {
  const spec: Obj = { ...(w.spec ?? {}) };
  const out: Obj = { ...w, spec };
  switch (w.kind) {
    case "Deployment": {
      setIfUnset(spec, "replicas", 1);
      const strategy: Obj = { ...(spec["strategy"] ?? {}) };
      setIfUnset(strategy, "type", "RollingUpdate");
      if (strategy["type"] === "RollingUpdate") {
        const ru: Obj = { ...(strategy["rollingUpdate"] ?? {}) };
        setIfUnset(ru, "maxUnavailable", "25%");
        setIfUnset(ru, "maxSurge", "25%");
        strategy["rollingUpdate"] = ru;
      }
      spec["strategy"] = strategy;
      setIfUnset(spec, "revisionHistoryLimit", 10);
      setIfUnset(spec, "progressDeadlineSeconds", 600);
      break;
    }
    case "ReplicaSet":
      setIfUnset(spec, "replicas", 1);
      break;
    case "DaemonSet": {
      const u: Obj = { ...(spec["updateStrategy"] ?? {}) };
      setIfUnset(u, "type", "RollingUpdate");
      if (u["type"] === "RollingUpdate") {
        const ru: Obj = { ...(u["rollingUpdate"] ?? {}) };
        setIfUnset(ru, "maxUnavailable", 1);
        setIfUnset(ru, "maxSurge", 0);
        u["rollingUpdate"] = ru;
      }
      spec["updateStrategy"] = u;
      setIfUnset(spec, "revisionHistoryLimit", 10);
      break;
    }
    case "StatefulSet": {
      setIfUnset(spec, "podManagementPolicy", "OrderedReady");
      const u: Obj = { ...(spec["updateStrategy"] ?? {}) };
      if (!u["type"]) {
        u["type"] = "RollingUpdate";
        u["rollingUpdate"] ??= {};
      }
      if (u["type"] === "RollingUpdate" && isObj(u["rollingUpdate"]))
        u["rollingUpdate"] = { partition: 0, ...u["rollingUpdate"] };
      spec["updateStrategy"] = u;
      const keep: Obj = { ...(spec["persistentVolumeClaimRetentionPolicy"] ?? {}) };
      setIfUnset(keep, "whenDeleted", "Retain");
      setIfUnset(keep, "whenScaled", "Retain");
      spec["persistentVolumeClaimRetentionPolicy"] = keep;
      setIfUnset(spec, "replicas", 1);
      setIfUnset(spec, "revisionHistoryLimit", 10);
      if (Array.isArray(spec["volumeClaimTemplates"]))
        spec["volumeClaimTemplates"] = spec["volumeClaimTemplates"].map(claim);
      break;
    }
    case "Job":
      defaultJobSpec(spec);
      // SetDefaults_Job: a Job without labels takes its template's.
      if (!w.metadata["labels"] && isObj(spec["template"]?.metadata?.labels))
        out["metadata"] = { ...w.metadata, labels: spec["template"].metadata.labels };
      break;
    case "CronJob": {
      setIfUnset(spec, "concurrencyPolicy", "Allow");
      if (spec["suspend"] === undefined) spec["suspend"] = false;
      setIfUnset(spec, "successfulJobsHistoryLimit", 3);
      setIfUnset(spec, "failedJobsHistoryLimit", 1);
      const jt = spec["jobTemplate"];
      if (isObj(jt) && isObj(jt["spec"]))
        spec["jobTemplate"] = { ...jt, spec: { ...jt["spec"], template: template(jt["spec"]["template"]) } };
      break;
    }
    case "PersistentVolumeClaim":
      return claim(out) as T;
  }
  if (spec["template"] !== undefined) spec["template"] = template(spec["template"]);
  return out as T;
}

/** SetDefaults_Job (batch/v1) on a spec, in place. */
function defaultJobSpec(spec: Obj): void {
  if (spec["completions"] == null && spec["parallelism"] == null) {
    spec["completions"] = 1;
    spec["parallelism"] = 1;
  }
  if (spec["parallelism"] == null) spec["parallelism"] = 1;
  if (spec["backoffLimit"] == null) spec["backoffLimit"] = spec["backoffLimitPerIndex"] != null ? 2147483647 : 6;
  setIfUnset(spec, "completionMode", "NonIndexed");
  if (spec["suspend"] == null) spec["suspend"] = false;
  // JobPodReplacementPolicy (on by default since 1.29).
  setIfUnset(spec, "podReplacementPolicy", spec["podFailurePolicy"] ? "Failed" : "TerminatingOrFailed");
}

/** A creationTimestamp in whole seconds, as metav1.Time serialises (RFC 3339, no fraction). */
export function wholeSeconds(ts: string | null | undefined): string | null | undefined {
  if (!ts) return ts;
  const ms = Date.parse(ts);
  return Number.isNaN(ms) ? ts : new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}
