// kubelet's order on a stop (SIGTERM, SIGINT, close()): admit nothing new, let what is in flight finish within the
// grace, end the connections left, then close the runtime connection and let the state directory go.
import { ProblemError } from "../usecases/problems.js";
import { isKubePath } from "../kubeapi/paths.js";
import { toKubeStatus } from "../kubeapi/status.js";

/** How long a stop (SIGTERM, SIGINT, close()) waits for the requests and the syncs in flight before it closes
 * the runtime connection anyway (docs/reliability.md). */
export const SHUTDOWN_GRACE_MS = 30_000;

/** Requests being answered; once `stopping`, what still arrives is answered 503 shutting-down. */
export interface Drain {
  stopping: boolean;
  inFlight: number;
  idle: (() => void) | undefined;
}

export interface ShutdownSteps {
  drain: Drain;
  stopListening(): void;
  closeConnections(): Promise<void>;
  markStopping(deadline: number): Promise<void>;
  stopWork(): Promise<void>;
  release(): Promise<void>;
}

/** kubelet's order on a stop: admit nothing new (the listener closes, so the port is free for the next process at
 * once, and what still arrives on an open connection is answered 503 shutting-down), let what is in flight finish
 * (requests, the loop's pass, the controllers' deletes) within SHUTDOWN_GRACE_MS, then end the connections left
 * (watches, follows), and only then close the runtime connection and let the state directory go. The lock says the
 * process is stopping, so a supervisor's restart meanwhile waits for it instead of refusing. */
export async function shutdown(o: ShutdownSteps): Promise<void> {
  const deadline = Date.now() + SHUTDOWN_GRACE_MS;
  o.drain.stopping = true;
  o.stopListening();
  await o.markStopping(deadline);
  const requests = o.drain.inFlight === 0 ? Promise.resolve() : new Promise<void>((res) => (o.drain.idle = res));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const grace = new Promise<void>((res) => (timer = setTimeout(res, Math.max(0, deadline - Date.now()))));
  await Promise.race([Promise.all([requests, o.stopWork()]), grace]);
  clearTimeout(timer);
  await o.closeConnections();
  await o.release();
}

/** The answer to a request that arrives while the node stops: 503 shutting-down, a Status on Kubernetes paths. */
export function shuttingDown(path: string): Response {
  const e = new ProblemError(
    "shutting-down",
    "podsync is shutting down: it takes no new request while it finishes those in flight; retry once it is back",
  );
  if (isKubePath(path)) {
    const r = toKubeStatus(e).toResponse();
    r.headers.set("connection", "close");
    r.headers.set("retry-after", "1");
    return r;
  }
  return e.toResponse(path, { connection: "close", "retry-after": "1" });
}

/** What a stop ends, in kubelet's order. */
export interface NodeWork {
  services: { stop(): void };
  stopLogRotation: () => void;
  fleet: { close(): Promise<void> } | undefined;
  loop: { stop(): Promise<void> };
  controllers: { settle(): Promise<void> };
  dataplane: { stop(): Promise<void> } | undefined;
  stores: { close(): Promise<void> }[];
}

/** The node's work stopped, in this order: the Services model, log rotation, the fleet link, the loop, the
 * controllers' deletes in flight, the data plane; then the stores that may still write (probe state, workloads). */
export async function stopWork(w: NodeWork): Promise<void> {
  w.services.stop();
  w.stopLogRotation();
  await w.fleet?.close();
  await w.loop.stop();
  await w.controllers.settle();
  await w.dataplane?.stop();
  for (const store of w.stores) await store.close().catch(() => undefined);
}

/** Start-up failed once the work had begun (the port is taken): nothing of this process may go on holding the state
 * directory. The work stops as in stopWork, but for the Services model and the controllers' settle. */
export async function abandonWork(w: NodeWork): Promise<void> {
  w.stopLogRotation();
  await w.fleet?.close();
  await w.loop.stop();
  await w.dataplane?.stop();
  for (const store of w.stores) await store.close().catch(() => undefined);
}
