// A registry row as the owner sees it: Ready, NotReady or Unknown (kubelet's node lifecycle controller: a node
// silent for the grace period is not ready; one never heard from is Unknown), as a v1-shaped object. Pure.
import type { PodSummary } from "./protocol.js";
import { SILENT_MS } from "./protocol.js";

export type NodeCondition = "Ready" | "NotReady" | "Unknown";

export interface RegistryEntry {
  name: string;
  labels: Record<string, string>;
  taints: unknown[];
  capacity: Record<string, string>;
  version: string;
  enrolledAt: number;
  revokedAt: number | null;
  connected: boolean;
  lastSeen: number | null;
  generation: number;
  desiredGeneration: number;
  pods: PodSummary[];
  error: string | null;
}

export interface FleetNode {
  apiVersion: "fleet.podsync.dev/v1alpha1";
  kind: "FleetNode";
  metadata: { name: string; labels: Record<string, string>; creationTimestamp: string };
  spec: { taints: unknown[] };
  status: {
    condition: NodeCondition;
    connected: boolean;
    revoked: boolean;
    lastSeen: string | null;
    agentVersion: string;
    capacity: Record<string, string>;
    generation: number;
    desiredGeneration: number;
    pods: PodSummary[];
    error?: string;
  };
}

/** `heard`: when the open connection last spoke (its heartbeat), if one is open. */
export function conditionOf(e: RegistryEntry, heard: number | undefined, now: number): NodeCondition {
  if (e.revokedAt !== null) return "NotReady";
  // An open connection heard from lately: Ready, even before its hello is written to the row.
  if (heard !== undefined && now - heard <= SILENT_MS) return "Ready";
  return e.lastSeen === null ? "Unknown" : "NotReady";
}

export function fleetNode(e: RegistryEntry, heard: number | undefined, now: number): FleetNode {
  const lastSeen = Math.max(e.lastSeen ?? 0, heard ?? 0);
  return {
    apiVersion: "fleet.podsync.dev/v1alpha1",
    kind: "FleetNode",
    metadata: { name: e.name, labels: e.labels, creationTimestamp: iso(e.enrolledAt) },
    spec: { taints: e.taints },
    status: {
      condition: conditionOf(e, heard, now),
      connected: heard !== undefined,
      revoked: e.revokedAt !== null,
      lastSeen: lastSeen ? iso(lastSeen) : null,
      agentVersion: e.version,
      capacity: e.capacity,
      generation: e.generation,
      desiredGeneration: e.desiredGeneration,
      pods: e.pods,
      ...(e.error ? { error: e.error } : {}),
    },
  };
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
