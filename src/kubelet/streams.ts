// The front door's logs and exec (a pod's running container, by kubelet's rules for a missing name), and claims.
import type { CriClient } from "../cri/client.js";
import type { PodRef } from "../container/types.js";
import { getPodStatus } from "../kuberuntime/pod-status.js";
import { ContainerChoiceError, pickContainer } from "../container/container-choice.js";
import { pickInstance } from "../logs/pick-instance.js";
import { readLogs } from "../logs/read-logs.js";
import { execSync, runningInstance } from "../kuberuntime/exec.js";
import { ContainerState } from "../gen/runtime/v1/api_pb.js";
import { listClaims, removeClaim } from "../volumemanager/claims.js";
import { counted, isEmpty, refFromStatus, type RuntimeContext } from "./context.js";
import { PodNotFoundError, UnsupportedError, type PodRuntime } from "./types.js";

export function createStreams(
  ctx: RuntimeContext,
): Pick<PodRuntime, "logs" | "execStream" | "portForwardStream" | "exec" | "claims" | "removeClaim"> {
  const { cri, o, syncOptions, volumeHost } = ctx;
  return {
    async logs(uid, req) {
      const files = o.logFiles;
      if (!files) throw new UnsupportedError("container logs are not readable on this deployment");
      const status = await getPodStatus(cri, { uid, name: "", namespace: "" }, "full");
      if (isEmpty(status)) throw new PodNotFoundError(uid);
      const pod = refFromStatus(uid, status);
      const container = pickContainer(status, pod.name, req.container, req.defaultContainers);
      const instance = pickInstance(status, pod.name, container, req.previous === true);
      const path = (await cri.containerStatus({ containerId: instance.id })).status?.logPath ?? "";
      // The runtime reports where it writes; read only inside this node's pod log directory.
      if (!insideDir(path, syncOptions.node.podLogsDir))
        throw new ContainerChoiceError(
          "bad-request",
          `container ${JSON.stringify(container)} in pod ${JSON.stringify(pod.name)} has no log file under the node's pod log directory`,
        );
      const running = async () =>
        (await cri.containerStatus({ containerId: instance.id }).catch(() => undefined))?.status?.state ===
        ContainerState.CONTAINER_RUNNING;
      return {
        pod,
        container,
        containerId: instance.id,
        read: (options, write, follow) => readLogs(files, path, options, write, follow && { ...follow, running }),
      };
    },

    claims: (desired = []) =>
      counted(cri, async (c) => ({ claims: await listClaims(c, volumeHost(), syncOptions.node.rootDir, desired) })),

    removeClaim: (namespace, name, desired = []) =>
      counted(cri, async (c) =>
        removeClaim(c, volumeHost(), syncOptions.node.rootDir, namespace, name, desired).then(() => ({})),
      ),

    execStream: (uid, req) =>
      counted(cri, async (c) => {
        const t = await execTarget(c, uid, req.container);
        const r = await c.exec({
          containerId: t.containerId,
          cmd: req.command,
          tty: req.tty,
          stdin: req.stdin,
          stdout: req.stdout,
          stderr: req.stderr && !req.tty,
        });
        return { ...t, url: r.url };
      }),

    portForwardStream: (uid, ports) =>
      counted(cri, async (c) => {
        const status = await getPodStatus(c, { uid, name: "", namespace: "" });
        const sandbox = status.sandboxStatuses[0];
        if (!sandbox) throw new PodNotFoundError(uid);
        const r = await c.portForward({ podSandboxId: sandbox.id, port: ports });
        return { pod: refFromStatus(uid, status), sandboxId: sandbox.id, url: r.url };
      }),

    exec: (uid, req) =>
      counted(cri, async (c) => {
        const t = await execTarget(c, uid, req.container);
        const r = await execSync(c, t.containerId, req.command, req.timeoutSeconds, req.maxOutputBytes);
        return { ...r, pod: t.pod, container: t.container };
      }),
  };
}

/** The pod's running instance of a container (kubelet's rules for a missing name), for exec. */
async function execTarget(
  c: CriClient,
  uid: string,
  name: string | undefined,
): Promise<{ pod: PodRef; container: string; containerId: string }> {
  const status = await getPodStatus(c, { uid, name: "", namespace: "" });
  if (isEmpty(status)) throw new PodNotFoundError(uid);
  const pod = refFromStatus(uid, status);
  const container = pickContainer(status, pod.name, name);
  return { pod, container, containerId: runningInstance(status, pod.name, container) };
}

/** `path` lies inside `dir` once `.` and `..` are resolved. */
function insideDir(path: string, dir: string): boolean {
  const norm = (p: string) => {
    const out: string[] = [];
    for (const part of p.split("/")) {
      if (part === "" || part === ".") continue;
      if (part === "..") out.pop();
      else out.push(part);
    }
    return `/${out.join("/")}`;
  };
  if (!path.startsWith("/")) return false;
  const d = norm(dir);
  return norm(path).startsWith(d === "/" ? "/" : `${d}/`);
}
