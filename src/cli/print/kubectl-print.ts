// kubectl's `get pods` table (pkg/printers/internalversion/printers.go printPod) over v1.Pod objects:
// NAME READY STATUS RESTARTS AGE, with STATUS as kubectl computes it (the reason of the first init container
// that has not finished, else of the last app container waiting or terminated with a reason, else the phase)
// and ages as duration.HumanDuration prints them. For `podsync get` and the node agent's `podsync pods`.
import type { V1Pod } from "../../status/api-status.js";
import { table } from "../output.js";

/** k8s.io/apimachinery/pkg/util/duration.HumanDuration */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.floor(hours / 24) % 365;
    return dy === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${dy}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

export interface PodRow {
  name: string;
  ready: string;
  status: string;
  restarts: string;
  age: string;
}

/** printPod */
export function podRow(pod: V1Pod, now: number): PodRow {
  const st = pod.status;
  const total = pod.spec?.containers.length ?? st.containerStatuses.length;
  let reason: string = st.phase;
  let restarts = 0;
  let readyContainers = 0;
  let lastRestart = 0;
  const noteRestart = (finishedAt: string | null | undefined) => {
    if (finishedAt) lastRestart = Math.max(lastRestart, Date.parse(finishedAt));
  };
  let initializing = false;
  const inits = st.initContainerStatuses ?? [];
  for (let i = 0; i < inits.length; i++) {
    const c = inits[i]!;
    restarts += c.restartCount;
    noteRestart(c.lastState.terminated?.finishedAt);
    const t = c.state.terminated;
    if (t && t.exitCode === 0) continue;
    if (t) reason = t.reason ? `Init:${t.reason}` : `Init:ExitCode:${t.exitCode}`;
    else if (c.state.waiting?.reason && c.state.waiting.reason !== "PodInitializing") reason = `Init:${c.state.waiting.reason}`;
    else reason = `Init:${i}/${pod.spec?.initContainers?.length ?? inits.length}`;
    initializing = true;
    break;
  }
  const initialized = st.conditions.some((c) => c.type === "Initialized" && c.status === "True");
  if (!initializing || initialized) {
    restarts = 0;
    let hasRunning = false;
    for (let i = st.containerStatuses.length - 1; i >= 0; i--) {
      const c = st.containerStatuses[i]!;
      restarts += c.restartCount;
      noteRestart(c.lastState.terminated?.finishedAt);
      if (c.state.waiting?.reason) reason = c.state.waiting.reason;
      else if (c.state.terminated?.reason) reason = c.state.terminated.reason;
      else if (c.state.terminated) reason = `ExitCode:${c.state.terminated.exitCode}`;
      else if (c.ready && c.state.running) {
        hasRunning = true;
        readyContainers++;
      }
    }
    if (reason === "Completed" && hasRunning) reason = st.conditions.some((c) => c.type === "Ready" && c.status === "True") ? "Running" : "NotReady";
  }
  const created = pod.metadata.creationTimestamp ? Date.parse(pod.metadata.creationTimestamp) : 0;
  return {
    name: pod.metadata.name,
    ready: `${readyContainers}/${total}`,
    status: reason,
    restarts: lastRestart ? `${restarts} (${humanDuration(now - lastRestart)} ago)` : String(restarts),
    age: created ? humanDuration(now - created) : "<unknown>",
  };
}

/** kubectl's column layout: upper-case headers, columns padded to the widest cell plus three spaces; with
 * `namespace`, kubectl get pods -A's NAMESPACE column first. */
export function podTable(pods: readonly V1Pod[], now: number, o: { namespace?: boolean } = {}): string {
  const rows = pods.map((p) => podRow(p, now));
  const ns = (cells: string[], namespace: string) => (o.namespace ? [namespace, ...cells] : cells);
  const cells = [ns(["NAME", "READY", "STATUS", "RESTARTS", "AGE"], "NAMESPACE"), ...rows.map((r, i) => ns([r.name, r.ready, r.status, r.restarts, r.age], pods[i]!.metadata.namespace))];
  return table(cells);
}
