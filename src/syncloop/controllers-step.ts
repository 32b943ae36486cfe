// The sync loop's trigger of the workload controllers (src/controllers/run.ts, through the LoopControllers port):
// once per pass, before the relist, on the last relist's view; the pods they create are synced in the same pass.
import type { DesiredPod } from "../pleg/desired-state.js";
import { updateDesired } from "./pod-records.js";
import { apiStatusOf } from "./pod-status-view.js";
import { failure } from "./report.js";
import type { LoopState } from "./state.js";

/** Run the controllers' pass; when it created or deleted pods, the desired set is listed again and taken. */
export async function controllersStep(
  s: LoopState,
  t0: number,
  entries: DesiredPod[],
  specChanged: Set<string>,
): Promise<{ entries: DesiredPod[]; specChanged: Set<string> }> {
  const controllers = s.o.controllers;
  if (!controllers) return { entries, specChanged };
  // The controllers see the pods as the last relist showed them; what they create is synced in this pass.
  const c = await controllers
    .pass(t0, (uid) => apiStatusOf(s, uid))
    .catch(
      (e): Awaited<ReturnType<typeof controllers.pass>> => (
        s.reporter.report("controllers", undefined, failure(e)),
        // A failed pass is tried again at the interval.
        { created: [], deleted: [], requeueAt: t0 }
      ),
    );
  s.controllersDue = c.requeueAt ?? Infinity;
  if (!c.created.length && !c.deleted.length) return { entries, specChanged };
  s.changedAt = t0;
  const listed = await s.o.desired.list();
  const changed = new Set([...specChanged, ...updateDesired(s, listed)]);
  // The pods they made were never synced: due at once (start-up timing, not a request's).
  for (const uid of c.created) Object.assign(s.records.get(uid) ?? {}, { lastSyncStart: 0, lastSyncEnd: -Infinity });
  return { entries: listed, specChanged: changed };
}
