// Package kubelet/ — the pod runtime: kuberuntime/'s steps and status/'s v1 status composed behind ONE front door,
// as kubelet.go composes its runtime manager and status (status above the runtime). Imports kuberuntime/ and status/.
//
// The engine's one front door, shaped like kubelet's kubecontainer.Runtime: plan, sync, status and delete
// for one pod, and the runtime's own readiness. The HTTP routes, the Worker, the bench and the tests all
// come through here; nothing above the engine assembles a sync from its parts.
//
// Every call runs under the per-pod lock (plan and status excepted: they only read), so a request and any
// other caller never act on one pod at once; its runtime writes go through the lock's fence. Each result
// carries the number of CRI round trips it cost. On Node every caller comes through the pod workers
// (src/podworkers/), so the lock is uncontended there; it orders callers on Workers, where each isolate has its own
// pod workers and the node's Durable Object lock is shared, and the front door's direct callers (bench, tests).
//
// The front door is composed of named parts on one shared context (context.ts): sync.ts (plan, checkUids, sync),
// read.ts (apiStatus, list, status, ready), delete.ts (delete, deleting; evict, eviction, forgetEviction), streams.ts (logs,
// exec, execStream, claims) and admission.ts (admit). Its types are in types.ts.
import type { CriClient } from "../cri/client.js";
import { createRuntimeContext } from "./context.js";
import { createDelete, createEviction } from "./delete.js";
import { createReads } from "./read.js";
import { createStreams } from "./streams.js";
import { createSync } from "./sync.js";
import type { PodRuntime, PodRuntimeOptions } from "./types.js";

export * from "./types.js";

export function createPodRuntime(cri: CriClient, o: PodRuntimeOptions = {}): PodRuntime {
  const ctx = createRuntimeContext(cri, o);
  return {
    ...createSync(ctx),
    ...createReads(ctx),
    ...createDelete(ctx),
    ...createEviction(ctx),
    ...createStreams(ctx),
    admit: ctx.admit,
  };
}
