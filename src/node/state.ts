// The node's state directory and the stores in it: the directory's lock, the used jtis, the desired pods (Secrets
// sealed), the probe workers' state and the workloads. A directory that cannot be used is not fatal: each store
// says why, and start-up goes on with what it has (the banner warns).
import { join, resolve } from "node:path";
import type { StateUnavailableError } from "../pleg/state-unavailable.js";
import { createProber, MemoryProbeStateStore, type ProbeStateStore } from "../prober/prober.js";
import { FileDesiredState } from "../state/desired-pods.js";
import { FileProbeStateStore } from "../state/probe-state.js";
import { loadSealKey } from "../state/seal-key.js";
import { SealedDesiredState } from "../state/sealed-desired-state.js";
import { StateDirInUseError, StateDirLock } from "../state/state-dir-lock.js";
import { FileReplayStore } from "../state/used-jtis.js";
import { FileWorkloadStore } from "../state/workloads.js";
import { migrateClaimLayout } from "../host/volumes/claim-layout.js";
import { nodeProbeNetwork } from "../host/probe-network.js";
import { podClaims } from "../volumemanager/volumes.js";
import type { CriClient } from "../cri/client.js";
import type { Settings } from "../settings/node.js";
import type { Keys } from "./config.js";
import { jsonLog } from "./config.js";

/** Where the node's state lives when PODSYNC_STATE_DIR is unset (outside dev mode). */
export const DEFAULT_STATE_DIR = "/var/lib/podsync/state";

/** Used jtis persist on the node, so a token never acts twice even across restarts; the desired pods (pods/,
 * generation.json) beside them are the node agent's store. Signed requests get 503 state-unavailable while the
 * directory cannot be used. */
export async function openNodeState(s: Settings, keys: Keys) {
  const stateDir = s.PODSYNC_STATE_DIR ?? (keys.dev ? join(resolve(s.PODSYNC_DEV_DIR), "state") : DEFAULT_STATE_DIR);
  // One process per state directory, before anything in it is read: a second podsync on the same directory
  // refuses to start (StateDirInUseError, naming it and the holder's pid). The stores take the lock before they
  // load, so one opened later (the directory was unusable at start) still holds it first.
  const dirLock = new StateDirLock(stateDir);
  const lockError = await dirLock.acquire().then(
    () => undefined,
    (e: unknown) => {
      if (e instanceof StateDirInUseError) throw e;
      return e as StateUnavailableError;
    },
  );
  const replay = new FileReplayStore(join(stateDir, "jti"), { lock: dirLock });
  const skipped: string[] = [];
  const files = new FileDesiredState(stateDir, {
    onSkip: (file, why) => skipped.push(`${file}: ${why}`),
    lock: dirLock,
  });
  const stateError =
    lockError ??
    (await replay
      .open()
      .then(() => files.open())
      .then(
        () => undefined,
        (e: StateUnavailableError) => e,
      ));
  // Secrets signed with a pod are stored sealed under the node's key (<stateDir>/secrets.key), never in clear.
  const desired = new SealedDesiredState(files, () => loadSealKey(stateDir));
  return { stateDir, dirLock, lockError, replay, files, skipped, stateError, desired };
}
export type NodeState = Awaited<ReturnType<typeof openNodeState>>;

/** The prober, its workers' state persisted under the state dir so a restart keeps their counts; in memory (with a
 * warning) when the directory cannot be used. */
export async function openProber(st: NodeState, cri: CriClient, hostIPs: string[], quiet: boolean) {
  const log = jsonLog(quiet, "probes");
  const probeStore = new FileProbeStateStore(join(st.stateDir, "probes"), {
    onError: (e) => log({ error: `probe state not written: ${(e as NodeJS.ErrnoException)?.code ?? String(e)}` }),
  });
  const probeStoreError =
    st.lockError ??
    (await probeStore.open().then(
      () => undefined,
      (e: StateUnavailableError) => e,
    ));
  const probes: ProbeStateStore = probeStoreError ? new MemoryProbeStateStore() : probeStore;
  const prober = createProber({
    cri,
    network: nodeProbeNetwork,
    store: probes,
    ...(hostIPs[0] ? { hostIP: hostIPs[0] } : {}),
  });
  return { probeStore, probeStoreError, prober };
}

/** The node's workloads (workloads.log beside pods/, Secrets sealed), then the claims moved once to
 * <root>/volumes/pvc/<namespace>/<claim> (host/volumes/claim-layout.ts) before any pod syncs: which namespace an old
 * claim belongs to is read from the stores just loaded. */
export async function openWorkloadState(st: NodeState, rootDir: string, quiet: boolean) {
  const workloadFiles = new FileWorkloadStore(
    st.stateDir,
    () => loadSealKey(st.stateDir),
    (file, why) => st.skipped.push(`${file}: ${why}`),
  );
  const workloadsError = await workloadFiles.open().then(
    () => undefined,
    (e: StateUnavailableError) => e,
  );
  await migrateClaimLayout(
    rootDir,
    async () => {
      const [pods, stored] = await Promise.all([st.files.list(), workloadFiles.list()]);
      return {
        pods: pods.map((e) => ({ namespace: e.pod.metadata.namespace, claims: podClaims(e.pod) })),
        statefulSets: stored.flatMap(({ workload: w }) =>
          w.kind === "StatefulSet"
            ? [
                {
                  namespace: w.metadata.namespace,
                  name: w.metadata.name,
                  templates: (w.spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name),
                },
              ]
            : [],
        ),
        claims: stored.flatMap(({ workload: w }) =>
          w.kind === "PersistentVolumeClaim" ? [{ namespace: w.metadata.namespace, name: w.metadata.name }] : [],
        ),
      };
    },
    (line) => void (quiet || process.stdout.write(`${line}\n`)),
  ).catch((e: unknown) =>
    // Not fatal: the old tree stays in volumes/pvc.v1 and the next start goes on with it.
    process.stderr.write(`podsync: warning: claims not moved to the namespaced layout: ${(e as Error).message}\n`),
  );
  return { workloadFiles, workloadsError };
}
