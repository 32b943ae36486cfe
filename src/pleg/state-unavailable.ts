// The desired-state port's one failure (src/pleg/desired-state.ts): its stores (src/state/, the Worker's DOs) throw it.
// The node's state directory (PODSYNC_STATE_DIR) cannot be read or written. A request that needs it (every
// signed request records its jti there before it acts) fails with 503 state-unavailable and does not act.
export class StateUnavailableError extends Error {
  /** The system error code (EACCES, ENOSPC, ENOTDIR, ...), when there is one. */
  readonly code: string | undefined;
  constructor(what: string, cause: unknown) {
    const code = (cause as { code?: string })?.code;
    super(
      `the node's state directory cannot be used for ${what}${code ? ` (${code})` : ""}; the request did not act, retry once the node is fixed`,
      { cause },
    );
    this.code = code;
  }
}
