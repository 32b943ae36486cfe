// Container lifecycle hooks, as kubelet's handlerRunner runs them (pkg/kubelet/lifecycle/handlers.go, v1.33):
//   exec     ExecSync in the container with no timeout of its own (kubelet passes 0); a non-zero exit is a
//            failure, in the words of kubelet's remote runtime ("command '...' exited with N: <stderr>");
//   httpGet  one GET to the handler's host, or the pod's IP, on its port (a named one resolved from the
//            container's ports), with kubelet's "kube-lifecycle" User-Agent. Only a request that gets no
//            response fails the hook: kubelet ignores the status code (it discards the response);
//   sleep    waits the seconds given; an abort (the caller's deadline) ends it early, as a context would.
// Which hosts a pod may aim an httpGet hook at is Pod Security's "probe or lifecycle host" rule (baseline),
// checked at admission like the probes' hosts. The caller bounds every hook: postStart by the sync's deadline,
// preStop by the grace period (kuberuntime's executePreStopHook waits no longer, whatever the hook does).
import type { CriClient } from "../cri/client.js";
import { errorMessage } from "../cri/errors.js";
import type { Container, LifecycleHandler } from "../pod/schema.js";

/** kubelet's User-Agent for lifecycle requests (NewRequestForHTTPGetAction with "lifecycle"). */
export const LIFECYCLE_USER_AGENT = "kube-lifecycle/1.33";

/** The one connection a hook makes from the node: the probes' HTTP client (src/host/probe-network.ts) fits. */
export interface HookNetwork {
  http(req: {
    url: string;
    headers: [string, string][];
    timeoutMs: number;
  }): Promise<{ result: "Success" | "Warning" | "Failure" | "Unknown"; output: string }>;
}

export interface HookTarget {
  /** format.Pod: name_namespace(uid). */
  pod: string;
  container: Pick<Container, "name" | "ports">;
  containerId: string;
  /** The pod's IP (the node's, for hostNetwork): where an httpGet hook without a host goes. */
  podIP: string;
}

export interface HookDeps {
  cri: CriClient;
  /** Absent where this process cannot reach pods (Workers): an httpGet hook then fails, naming why. */
  network?: HookNetwork | undefined;
}

/** The longest any hook call may take when its caller gives no bound (ms). */
const DEFAULT_DEADLINE_MS = 120_000;

/** resolvePort: a number; a numeric string; or the name of one of the container's ports. */
export function resolvePort(port: number | string, container: Pick<Container, "name" | "ports">): number {
  if (typeof port === "number") return port;
  if (/^[0-9]+$/.test(port)) return Number(port);
  const p = (container.ports ?? []).find((cp) => cp.name === port);
  if (!p) throw new Error(`couldn't find port: ${port} in ${container.name}`);
  return p.containerPort;
}

const goList = (cmd: readonly string[]) => `[${cmd.join(" ")}]`;
const dec = new TextDecoder();

/** handlerRunner.Run: undefined when the hook succeeded, else kubelet's message for its FailedPostStartHook /
 * FailedPreStopHook event. `signal` ends a sleep early and cancels an exec; `deadlineMs` bounds an exec or HTTP call. */
export async function runHandler(
  deps: HookDeps,
  target: HookTarget,
  handler: LifecycleHandler,
  limits: { deadlineMs?: number; signal?: AbortSignal } = {},
): Promise<string | undefined> {
  const deadlineMs = Math.max(1, limits.deadlineMs ?? DEFAULT_DEADLINE_MS);
  const who = `for Container ${JSON.stringify(target.container.name)} in Pod ${JSON.stringify(target.pod)}`;
  if (handler.exec) {
    const cmd = handler.exec.command;
    let output = "";
    let err: string | undefined;
    try {
      // An abort (the pod is being deleted) cancels the call, as kubelet's cancelled sync context does.
      const r = await deps.cri.execSync(
        { containerId: target.containerId, cmd, timeout: 0n },
        { timeoutMs: deadlineMs, ...(limits.signal ? { signal: limits.signal } : {}) },
      );
      output = dec.decode(r.stdout) + dec.decode(r.stderr);
      if (r.exitCode !== 0) err = `command '${cmd.join(" ")}' exited with ${r.exitCode}: ${dec.decode(r.stderr)}`;
    } catch (e) {
      err = errorMessage(e);
    }
    return err === undefined
      ? undefined
      : `Exec lifecycle hook (${goList(cmd)}) ${who} failed - error: ${err}, message: ${JSON.stringify(output)}`;
  }
  if (handler.httpGet) {
    const g = handler.httpGet;
    const fail = (e: string) => `HTTP lifecycle hook (${g.path}) ${who} failed - error: ${e}`;
    if (!deps.network) return fail("this deployment cannot open connections to pods");
    let port: number;
    try {
      port = resolvePort(g.port, target.container);
    } catch (e) {
      return fail(errorMessage(e));
    }
    const host = g.host ?? target.podIP;
    if (!host) return fail("failed to find networking container: the pod has no IP");
    const headers: [string, string][] = (g.httpHeaders ?? []).map((h) => [h.name, h.value]);
    const has = (n: string) => headers.some(([k]) => k.toLowerCase() === n);
    if (!has("user-agent")) headers.push(["User-Agent", LIFECYCLE_USER_AGENT]);
    if (!has("accept")) headers.push(["Accept", "*/*"]);
    const h = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
    const path = g.path.startsWith("/") ? g.path : `/${g.path}`;
    const out = await deps.network.http({
      url: `${g.scheme.toLowerCase()}://${h}:${port}${path}`,
      headers,
      timeoutMs: deadlineMs,
    });
    // The probe client reports a response it did not like as "HTTP probe failed with statuscode: N"; for a
    // hook any response is an answer (kubelet only looks at the transport error).
    if (
      out.result === "Success" ||
      out.result === "Warning" ||
      out.output.startsWith("HTTP probe failed with statuscode")
    )
      return undefined;
    return fail(out.output);
  }
  if (handler.sleep) {
    const ms = handler.sleep.seconds * 1000;
    const ended = await new Promise<boolean>((resolve) => {
      if (limits.signal?.aborted) return resolve(false);
      const t = setTimeout(() => resolve(true), ms);
      limits.signal?.addEventListener("abort", () => (clearTimeout(t), resolve(false)), { once: true });
    });
    return ended
      ? undefined
      : `Sleep lifecycle hook (${handler.sleep.seconds}) ${who} failed - error: container terminated before sleep hook finished`;
  }
  return `Cannot run handler: invalid handler: ${JSON.stringify(handler)}`;
}
