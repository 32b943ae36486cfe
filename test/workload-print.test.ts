// kubectl's get columns for the workload kinds (printers.go printDeployment, printStatefulSet, printDaemonSet,
// printJob, printCronJob).
import { describe, expect, it } from "vitest";
import { workloadTable } from "../src/cli/print/workload-print.js";

const now = Date.parse("2026-01-01T01:00:00Z");
const created = "2026-01-01T00:55:00Z";

describe("kubectl get tables for workloads", () => {
  it("deploy, sts, ds", () => {
    expect(workloadTable("Deployment", [{ metadata: { name: "web", creationTimestamp: created }, spec: { replicas: 3 }, status: { readyReplicas: 2, updatedReplicas: 3, availableReplicas: 2 } }], now)).toBe(
      ["NAME   READY   UP-TO-DATE   AVAILABLE   AGE", "web    2/3     3            2           5m"].join("\n"),
    );
    expect(workloadTable("StatefulSet", [{ metadata: { name: "db", creationTimestamp: created }, spec: { replicas: 2 }, status: {} }], now)).toBe(["NAME   READY   AGE", "db     0/2     5m"].join("\n"));
    expect(workloadTable("DaemonSet", [{ metadata: { name: "agent", creationTimestamp: created }, spec: { template: { spec: { nodeSelector: { site: "lab" } } } }, status: { desiredNumberScheduled: 1, currentNumberScheduled: 1, numberReady: 1, updatedNumberScheduled: 1, numberAvailable: 1 } }], now)).toBe(
      ["NAME    DESIRED   CURRENT   READY   UP-TO-DATE   AVAILABLE   NODE SELECTOR   AGE", "agent   1         1         1       1            1           site=lab        5m"].join("\n"),
    );
  });
  it("jobs: STATUS from the conditions, COMPLETIONS, DURATION; cronjobs: TIMEZONE, LAST SCHEDULE", () => {
    const job = (spec: Record<string, unknown>, status: Record<string, unknown>) => ({ metadata: { name: "pi", creationTimestamp: created }, spec, status });
    expect(workloadTable("Job", [job({ completions: 2, parallelism: 1 }, { succeeded: 2, startTime: "2026-01-01T00:55:00Z", completionTime: "2026-01-01T00:55:42Z", conditions: [{ type: "Complete", status: "True" }] })], now)).toBe(
      ["NAME   STATUS     COMPLETIONS   DURATION   AGE", "pi     Complete   2/2           42s        5m"].join("\n"),
    );
    expect(workloadTable("Job", [job({ parallelism: 3 }, { succeeded: 0, startTime: "2026-01-01T00:59:00Z" })], now)).toContain("Running   0/1 of 3      60s");
    expect(workloadTable("CronJob", [{ metadata: { name: "tick", creationTimestamp: created }, spec: { schedule: "* * * * *", suspend: false }, status: { lastScheduleTime: "2026-01-01T00:59:00Z", active: [{}] } }], now)).toBe(
      ["NAME   SCHEDULE    TIMEZONE   SUSPEND   ACTIVE   LAST SCHEDULE   AGE", "tick   * * * * *   <none>     false     1        60s             5m"].join("\n"),
    );
    expect(workloadTable("Job", [], now)).toBe("No resources found in default namespace.");
  });
});
