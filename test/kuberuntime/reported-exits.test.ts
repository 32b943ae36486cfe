// Exits the runtime reported before its CRI status shows them (src/kuberuntime/reported-exits.ts): applied to the
// containers CRI still shows running, as the CRI plugin records them a moment later.
import { describe, expect, it } from "vitest";
import { withReportedExits } from "../../src/kuberuntime/reported-exits.js";
import { containerStatus, kubeletBasePodStatus } from "../support/status.js";

describe("withReportedExits", () => {
  const status = kubeletBasePodStatus([
    containerStatus("c-run", "main", "running", "h"),
    containerStatus("c-side", "side", "running", "h"),
    containerStatus("c-old", "main", "exited", "h", { exitCode: 2, finishedAt: 10, reason: "Error" }),
  ]);

  it("a running container reported exited is exited, with the code and time of the report and CRI's default reason", () => {
    const out = withReportedExits(
      status,
      new Map([
        ["c-run", { code: 137, at: 1234 }],
        ["c-side", { code: 0, at: 1240 }],
      ]),
    );
    expect(out.containerStatuses.map((c) => [c.id, c.state, c.exitCode, c.finishedAt, c.reason])).toEqual([
      ["c-run", "exited", 137, 1234, "Error"],
      ["c-side", "exited", 0, 1240, "Completed"],
      ["c-old", "exited", 2, 10, "Error"],
    ]);
    // The read it came from is not changed (it may be the status cache's).
    expect(status.containerStatuses[0]!.state).toBe("running");
  });

  it("what CRI already recorded stands, and a report that applies to nothing returns the same object", () => {
    expect(withReportedExits(status, new Map([["c-old", { code: 137, at: 99 }]]))).toBe(status);
    expect(withReportedExits(status, new Map([["gone", { code: 1, at: 99 }]]))).toBe(status);
    expect(withReportedExits(status, undefined)).toBe(status);
  });
});
