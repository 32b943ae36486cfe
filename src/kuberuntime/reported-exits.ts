// Exits the runtime has reported that its CRI status may not show yet: containerd 1.6 publishes a container's
// TaskExit, then deletes the task (the shim's cleanup, waiting for the log copy to finish) and only then records
// the exit in its CRI state, 100-200 ms later on this project's machines. A sync the exit triggered takes the
// exit from the event rather than waiting for that record: the container is dead once its init process is (its
// PID namespace goes with it), and the TaskExit's status and time are what the CRI plugin records as the
// container's exitCode and finishedAt (pkg/cri/server/events.go handleContainerExit).
//
// Not kubelet's: its Evented PLEG reads CRI's CONTAINER_STOPPED_EVENT (containerd >= 1.7), which comes after the
// record, with the statuses in it; this is the same decision made before the record, on containerd < 1.7 only.
// The reason is CRI's default for an exit (Completed or Error): an OOM kill shows as OOMKilled once CRI has
// recorded it, at the relist that follows (syncloop/pass.ts), and the restart decision reads only the exit code.
import type { RuntimeExit } from "../cri/container-events.js";
import type { PodStatus } from "../container/types.js";

export type ReportedExits = ReadonlyMap<string, RuntimeExit>;

/** The status with each reported exit applied to its container, if CRI still shows that one running or created;
 * the same object when none applies. */
export function withReportedExits(status: PodStatus, exits: ReportedExits | undefined): PodStatus {
  if (!exits?.size || !status.containerStatuses.some((c) => exits.has(c.id) && c.state !== "exited")) return status;
  return {
    ...status,
    containerStatuses: status.containerStatuses.map((c) => {
      const e = exits.get(c.id);
      if (!e || c.state === "exited") return c;
      return {
        ...c,
        state: "exited",
        exitCode: e.code,
        finishedAt: e.at,
        reason: e.code === 0 ? "Completed" : "Error",
      };
    }),
  };
}
