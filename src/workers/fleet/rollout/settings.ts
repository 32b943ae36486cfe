// The rollout coordinator's settings and binding, parsed on their own (as the fleet's are) so a Worker without
// rollouts is unchanged.
import { z } from "zod";
import { ProblemError } from "../../../usecases/problems.js";
import { formatIssues } from "../../../settings/common.js";
import type { FleetEnv, FleetNamespace } from "../settings.js";

export const RolloutSettings = z.object({
  /** How often an active rollout's coordinator looks at its nodes (its alarm): a node's change shows in the
   * rollout's counts within about one tick. */
  PODSYNC_FLEET_ROLLOUT_TICK_MS: z.coerce.number().int().min(100).max(60_000).default(1000),
});

export interface RolloutEnv extends FleetEnv {
  ROLLOUTS?: FleetNamespace;
}

export function rolloutSettingsOf(env: RolloutEnv): { tickMs: number } {
  const r = RolloutSettings.safeParse(env);
  if (!r.success) throw new ProblemError("misconfigured", `invalid rollout settings:\n${formatIssues(r.error)}`);
  return { tickMs: r.data.PODSYNC_FLEET_ROLLOUT_TICK_MS };
}
