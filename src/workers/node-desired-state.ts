// Durable Object NodeDesiredState (one per node). Guarantees: it is the only writer of the node's desired pods
// (StorageDesiredState) and workloads (StorageWorkloadStore), atomic per change; while it holds pods or workloads an
// alarm runs one reconcile pass per interval (the controllers first), and an idle node has no alarm; a failed pass is
// logged and the next comes at the interval. It also serves the node's Kubernetes API (node-kube.ts).
import { RELIST_INTERVAL_DEFAULT_MS } from "../settings/common.js";
import { StaleGenerationError, type DesiredPod } from "../pleg/desired-state.js";
import { UidConflictError } from "../kuberuntime/pod-identity.js";
import { startReconcileLoop, type ReconcileLoop } from "../syncloop/sync-loop.js";
import { createProber, type Prober } from "../prober/prober.js";
import type { DOState } from "./durable-object.js";
import { KUBE_PREFIX, NODE_HEADER } from "./desired-state-client.js";
import { nodeKube, reportFrom, type NodeKube } from "./node-kube.js";
import { nodeRuntime, nodeVerifier, sealed, sealKey } from "./node-runtime.js";
import { StorageWorkloadStore } from "./storage-workloads.js";
import { createControllers } from "../controllers/run.js";
import type { StoredWorkload } from "../controllers/store.js";
import { nodeInfoFrom, withNodeOverrides } from "../settings/node-info.js";
import { nodePolicy } from "../auth/policy.js";
import { templateRefusal } from "../usecases/admission/templates.js";
import { probeResultsJSON } from "./probe-results-json.js";
import { relistInterval, settingsOf, type Env, type WorkerConfig } from "./settings.js";
import { StorageDesiredState } from "./storage-desired-state.js";

/** The node agent this object runs: its reconcile loop, prober and Kubernetes API, for one configuration. */
interface Agent {
  loop: ReconcileLoop;
  settings: WorkerConfig;
  prober: Prober;
  kube: NodeKube;
}

/** Durable Object: one per node. It keeps the node's desired state and workloads (SQLite storage, see
 * StorageDesiredState and StorageWorkloadStore) and runs the node agent's reconcile on an alarm: every
 * PODSYNC_RELIST_INTERVAL_MS (default 10 s) while it holds desired pods or workloads, and no alarm at all while it
 * holds neither (an idle node costs nothing). Each alarm is one pass of the same loop Node runs on a timer
 * (syncloop/sync-loop.ts, driven by tick()): the workload controllers, then a relist through the node's cri-proxy
 * (ListPodSandbox + ListContainers), decide, and sync the pods that need it through the engine's front door, under
 * the same per-pod lease the HTTP routes take (nodeRuntime). The passes feed the node's Kubernetes API
 * (node-kube.ts), which this object serves.
 *
 * The loop's memory across alarms (the relist's detail caches, each pod's last fingerprint and decision, retry
 * and resync times) lives in this instance. When the runtime evicts the object it is rebuilt from nothing:
 * the first pass after that is a start-up pass (every desired pod synced once, its details read again).
 * Alarm work and requests to the object interleave at awaits; the loop reads each pod's spec at its sync and
 * a pod that left meanwhile is not brought back (as on Node). */
export class NodeDesiredState {
  private readonly store: StorageDesiredState;
  private readonly workloads: StorageWorkloadStore;
  private node: string | undefined;
  private agent: Agent | undefined;
  private passing: Promise<void> = Promise.resolve();
  constructor(
    private readonly state: DOState,
    private readonly env: Env,
  ) {
    // Tombstones last as long as a token issued before their removal can be valid: the lifetime plus the skew.
    this.store = new StorageDesiredState(state.storage, () => {
      const s = settingsOf(env);
      return s.PODSYNC_MAX_TOKEN_LIFETIME_S + s.PODSYNC_CLOCK_SKEW_S;
    });
    this.workloads = new StorageWorkloadStore(state.storage, () => sealKey(settingsOf(env)));
  }

  async fetch(req: Request): Promise<Response> {
    const url = new URL(req.url);
    if (url.pathname.startsWith(`${KUBE_PREFIX}/`)) return this.kube(req, url);
    const op = url.pathname.slice(1);
    const arg = (await req.json()) as Record<string, unknown> | null;
    const d = this.store;
    try {
      await this.learnNode(req.headers.get(NODE_HEADER));
      switch (op) {
        case "list":
          return Response.json(await d.list());
        case "get":
          return Response.json((await d.get(String(arg!["uid"]))) ?? null);
        case "generation":
          return Response.json(await d.generation());
        case "tombstone":
          return Response.json((await d.tombstone(String(arg!["uid"]))) ?? null);
        case "put":
          await d.put(arg as unknown as DesiredPod);
          await this.schedule();
          return Response.json(null);
        case "remove": {
          const iat = arg!["iat"];
          const removed = await d.remove(String(arg!["uid"]), typeof iat === "number" ? { iat } : undefined);
          await this.schedule();
          return Response.json(removed);
        }
        case "replace": {
          const { generation, entries, iat } = arg as { generation: number; entries: DesiredPod[]; iat: number | null };
          const r = await d.replace(generation, entries, iat === null ? undefined : { iat });
          await this.schedule();
          return Response.json(r);
        }
        case "kube-report": {
          // A Worker route's sync or delete: the Kubernetes API's pods and events (nothing to do before the node
          // is known and configured).
          const agent = this.node ? this.agentFor(this.node, settingsOf(this.env)) : undefined;
          agent?.kube.report(reportFrom(arg));
          return Response.json(null);
        }
        case "workloads/list":
          return Response.json(await this.workloads.list());
        case "workloads/putAll":
          await this.workloads.putAll((arg as { entries: StoredWorkload[] }).entries);
          await this.schedule(true);
          return Response.json(null);
        case "workloads/setStatus": {
          const { key, uid, status } = arg as { key: string; uid: string; status: Record<string, unknown> };
          await this.workloads.setStatus(key, uid, status);
          return Response.json(null);
        }
        case "workloads/remove": {
          const removed = await this.workloads.remove(String(arg!["key"]));
          await this.schedule(true);
          return Response.json(removed);
        }
        case "workloads/replace": {
          // A set with no workloads, before or after (a PUT of pods only), leaves the alarm as it is: the request
          // syncs its pods itself.
          const entries = (arg as { entries: StoredWorkload[] }).entries;
          const had = (await this.workloads.list()).length > 0;
          await this.workloads.replace(entries);
          await this.schedule(had || entries.length > 0);
          return Response.json(null);
        }
        case "probe-results": {
          // What the alarm's prober knows of these pods (readiness, startup, liveness by container id), for the
          // Worker's GET routes, which run outside this object. Nothing before the first pass.
          const uids = (arg!["uids"] as string[]).slice(0, 10_000);
          const prober = this.agent?.prober;
          return Response.json(
            Object.fromEntries(prober ? uids.map((uid) => [uid, probeResultsJSON(prober.results(uid))]) : []),
          );
        }
        default:
          return Response.json({ message: `no operation ${op}` }, { status: 404 });
      }
    } catch (e) {
      if (e instanceof StaleGenerationError)
        return Response.json({ message: e.message, current: e.current }, { status: 409 });
      if (e instanceof UidConflictError)
        return Response.json({ message: e.message, pod: e.pod, holder: e.holder }, { status: 409 });
      log({ node: this.node, op, event: "error", error: errorText(e) });
      throw e;
    }
  }

  /** The reconcile pass. A pass that fails is logged and the next one comes at the interval all the same (a
   * throw would make the runtime retry the alarm on its own back-off). */
  async alarm(): Promise<void> {
    const began = Date.now();
    let interval: number = RELIST_INTERVAL_DEFAULT_MS.workers;
    try {
      const node = this.node ?? (this.node = await this.state.storage.get<string>("node"));
      // Nothing desired (an alarm set before the set emptied): no pass and no next alarm. The loop's memory
      // stays for the next pod stored, which its request has just synced.
      if (!node || !(await this.busy())) return;
      const s = settingsOf(this.env);
      interval = relistInterval(s);
      const agent = this.agentFor(node, s);
      if (!agent) {
        log({
          loop: "reconcile",
          node,
          event: "error",
          error: "the node is not in PODSYNC_NODES: its desired pods are not reconciled",
        });
        return;
      }
      await this.pass(agent.loop);
    } catch (e) {
      log({ loop: "reconcile", node: this.node, event: "error", error: errorText(e) });
    }
    // A set emptied during the pass deleted the alarm: it stays off.
    if (await this.busy()) await this.state.storage.setAlarm(Math.max(Date.now(), began + interval));
  }

  /** Pods desired, or workloads whose controllers must run: the alarm has work. */
  private async busy(): Promise<boolean> {
    return (await this.store.list()).length > 0 || (await this.workloads.list()).length > 0;
  }

  /** One reconcile pass; the alarm's and the Kubernetes API's first one never run at once. */
  private pass(loop: ReconcileLoop): Promise<void> {
    const next = this.passing.then(() => loop.tick()).then(() => undefined);
    this.passing = next.catch(() => undefined);
    return next;
  }

  /** A Kubernetes API request (the Worker forwards /nodes/{node}/api/..., /apis/..., /version here), with the
   * request's own signal: a client gone ends its watch or log follow. */
  private async kube(req: Request, url: URL): Promise<Response> {
    await this.learnNode(req.headers.get(NODE_HEADER));
    const agent = this.node ? this.agentFor(this.node, settingsOf(this.env)) : undefined;
    if (!agent)
      return Response.json(
        {
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Failure",
          message: "the node is not in PODSYNC_NODES",
          reason: "NotFound",
          code: 404,
        },
        { status: 404 },
      );
    const inner = new URL(url.pathname.slice(KUBE_PREFIX.length) + url.search, url);
    return agent.kube.fetch(new Request(inner, req));
  }

  private async learnNode(name: string | null): Promise<void> {
    if (!name || name === this.node) return;
    if ((await this.state.storage.get<string>("node")) !== name) await this.state.storage.put("node", name);
    this.node = name;
  }

  /** After a change: an alarm while pods or workloads are desired (one already set stays), none once both are
   * empty. `now`: a change of the workloads runs the controllers at once (Node kicks its loop), not at the interval. */
  private async schedule(now = false): Promise<void> {
    const s = this.state.storage;
    if (!(await this.busy())) return s.deleteAlarm();
    const at = await s.getAlarm();
    if (now && (at === null || at > Date.now())) return s.setAlarm(Date.now());
    if (at !== null) return;
    let interval: number = RELIST_INTERVAL_DEFAULT_MS.workers;
    try {
      interval = relistInterval(settingsOf(this.env));
    } catch {
      // Misconfigured: the alarm logs it.
    }
    await s.setAlarm(Date.now() + interval);
  }

  /** The loop for this node, driven by the alarm (no timers of its own), and the node's Kubernetes API it feeds;
   * rebuilt when the settings change. */
  private agentFor(node: string, s: WorkerConfig): Agent | undefined {
    if (this.agent?.settings === s) return this.agent;
    void this.agent?.loop.stop();
    this.agent = undefined;
    const engine = nodeRuntime(this.env, s, node);
    const verifier = nodeVerifier(this.env, s, node);
    if (!engine || !verifier) return undefined;
    const prober = createProber({ cri: engine.cri });
    // Opened as the routes read it: the loop and the controllers sync and store pods with their Secrets.
    const desired = sealed(this.store, s);
    const kube = nodeKube({
      node,
      settings: s,
      verifier,
      runtime: engine.runtime,
      probes: (uid) => prober.results(uid),
      pass: () => this.pass(loop),
      workloads: this.workloads,
      log: (rec) => log({ loop: "kubeapi", node, ...rec }),
    });
    // Its syncs and deletes feed the Kubernetes API's pods and events; so does its relist.
    const runtime = kube.recording(engine.runtime);
    const info = nodeInfoFrom(withNodeOverrides(s, s.PODSYNC_NODES[node]!), node, {});
    const loop: ReconcileLoop = startReconcileLoop({
      runtime,
      onRelist: (entries, view) => kube.onRelist(entries, view),
      cri: engine.cri,
      desired,
      // The node-local controllers (src/controllers), the same pure steps Node's loop runs, at the start of every
      // pass: the pods they make are synced in the same pass, through the front door and the per-pod lease.
      controllers: createControllers({
        workloads: this.workloads,
        desired,
        runtime,
        nodeName: node,
        node: info,
        log: (rec) => log({ loop: "controllers", node, ...rec }),
        // The owner's bounds and policy in force hold for the controllers' pods as for a pod sent directly.
        limits: { maxPods: info.allocatable.pods ?? 110 },
        admitTemplate: templateRefusal(nodePolicy(s), runtime),
      }),
      // Exec probes only (ExecSync through the proxy, which must allow it); the routes refuse the other
      // handlers. They run in the alarm's passes, so no more often than the relist interval; their state lives in
      // this object's memory and starts over after an eviction.
      prober,
      manual: true,
      relistIntervalMs: relistInterval(s),
      resyncIntervalMs: s.PODSYNC_RESYNC_INTERVAL_MS,
      log: (rec) => log({ loop: "reconcile", node, ...rec }),
    });
    this.agent = { loop, settings: s, prober, kube };
    return this.agent;
  }
}

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e)).slice(0, 300);
const log = (rec: Record<string, unknown>) => console.log(JSON.stringify({ time: new Date().toISOString(), ...rec }));
