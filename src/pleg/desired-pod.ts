// A desired pod as the store keeps it, and the error a rollback gets: the shapes both the desired-state port
// (desired-state.ts) and the tombstones that guard it (tombstones.ts) use, kept apart so neither imports the other.
import type { Pod } from "../pod/schema.js";

/** Who put a pod in the desired state, for audit (from the verified token). */
export interface DesiredAudit {
  iss: string;
  kid?: string | undefined;
  jti?: string | undefined;
  /** The token's iat (seconds): a per-pod sync with an older iat is a rollback and is refused. */
  iat: number;
  /** Set when a PUT /v1/node/pods stored the pod (that set's generation); absent for a per-pod sync. */
  generation?: number | undefined;
}

export interface DesiredPod {
  pod: Pod;
  /** The ConfigMaps and Secrets signed together with the pod (its volumes and env refer to them). How secret
   * data is kept at rest is the store's business and is documented with it. */
  objects?: { configMaps?: unknown[]; secrets?: unknown[] } | undefined;
  audit: DesiredAudit;
  /** When it was stored (ms since the epoch). */
  storedAt: number;
}

/** A change that would roll the node back: a set whose generation is not above the node's, or a pod whose
 * token was issued before the one that last changed it. Nothing was changed. */
export class StaleGenerationError extends Error {
  constructor(
    message: string,
    /** What the store holds now: the node's generation, or the stored pod's iat (absent when the pod is gone). */
    readonly current?: number,
  ) {
    super(message);
  }
}
