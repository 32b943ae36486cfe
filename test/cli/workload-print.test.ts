// kubectl's get columns for the workload kinds (printers.go printDeployment, printStatefulSet, printDaemonSet,
// printJob, printCronJob), as `podsync get` renders them through the resource registry.
import { describe, expect, it } from "vitest";
import { workloadResource } from "../../src/cli/print/workload-print.js";
import { render } from "../../src/cli/print/format.js";
import type { KubeObject } from "../../src/cli/resources/resource.js";
import type { WorkloadKind } from "../../src/pod/workloads/schema.js";

const now = Date.parse("2026-01-01T01:00:00Z");
const created = "2026-01-01T00:55:00Z";
const workloadTable = (kind: WorkloadKind, objects: unknown[], at: number, wide = false) =>
  render(
    objects as KubeObject[],
    { kind: "table", wide },
    { resource: workloadResource(kind), single: false, allNamespaces: false, headers: true, now: at, node: "" },
  );

describe("kubectl get tables for workloads", () => {
  it("-o wide adds the printer's priority-1 columns, as the node's Table for kubectl has them", async () => {
    const d = {
      metadata: { name: "web", creationTimestamp: created },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: "web" } },
        template: { spec: { containers: [{ name: "main", image: "nginx:1" }] } },
      },
      status: { readyReplicas: 1, updatedReplicas: 1, availableReplicas: 1 },
    };
    expect(await workloadTable("Deployment", [d], now, true)).toBe(
      [
        "NAME   READY   UP-TO-DATE   AVAILABLE   AGE   CONTAINERS   IMAGES    SELECTOR",
        "web    1/1     1            1           5m    main         nginx:1   app=web",
      ].join("\n"),
    );
  });

  it("deploy, sts, ds", async () => {
    expect(
      await workloadTable(
        "Deployment",
        [
          {
            metadata: { name: "web", creationTimestamp: created },
            spec: { replicas: 3 },
            status: { readyReplicas: 2, updatedReplicas: 3, availableReplicas: 2 },
          },
        ],
        now,
      ),
    ).toBe(["NAME   READY   UP-TO-DATE   AVAILABLE   AGE", "web    2/3     3            2           5m"].join("\n"));
    expect(
      await workloadTable(
        "StatefulSet",
        [{ metadata: { name: "db", creationTimestamp: created }, spec: { replicas: 2 }, status: {} }],
        now,
      ),
    ).toBe(["NAME   READY   AGE", "db     0/2     5m"].join("\n"));
    expect(
      await workloadTable(
        "DaemonSet",
        [
          {
            metadata: { name: "agent", creationTimestamp: created },
            spec: { template: { spec: { nodeSelector: { site: "lab" } } } },
            status: {
              desiredNumberScheduled: 1,
              currentNumberScheduled: 1,
              numberReady: 1,
              updatedNumberScheduled: 1,
              numberAvailable: 1,
            },
          },
        ],
        now,
      ),
    ).toBe(
      [
        "NAME    DESIRED   CURRENT   READY   UP-TO-DATE   AVAILABLE   NODE SELECTOR   AGE",
        "agent   1         1         1       1            1           site=lab        5m",
      ].join("\n"),
    );
  });
  it("jobs: STATUS from the conditions, COMPLETIONS, DURATION; cronjobs: TIMEZONE, LAST SCHEDULE", async () => {
    const job = (spec: Record<string, unknown>, status: Record<string, unknown>) => ({
      metadata: { name: "pi", creationTimestamp: created },
      spec,
      status,
    });
    expect(
      await workloadTable(
        "Job",
        [
          job(
            { completions: 2, parallelism: 1 },
            {
              succeeded: 2,
              startTime: "2026-01-01T00:55:00Z",
              completionTime: "2026-01-01T00:55:42Z",
              conditions: [{ type: "Complete", status: "True" }],
            },
          ),
        ],
        now,
      ),
    ).toBe(
      ["NAME   STATUS     COMPLETIONS   DURATION   AGE", "pi     Complete   2/2           42s        5m"].join("\n"),
    );
    expect(
      await workloadTable("Job", [job({ parallelism: 3 }, { succeeded: 0, startTime: "2026-01-01T00:59:00Z" })], now),
    ).toContain("Running   0/1 of 3      60s");
    expect(
      await workloadTable(
        "CronJob",
        [
          {
            metadata: { name: "tick", creationTimestamp: created },
            spec: { schedule: "* * * * *", suspend: false },
            status: { lastScheduleTime: "2026-01-01T00:59:00Z", active: [{}] },
          },
        ],
        now,
      ),
    ).toBe(
      [
        "NAME   SCHEDULE    TIMEZONE   SUSPEND   ACTIVE   LAST SCHEDULE   AGE",
        "tick   * * * * *   <none>     False     1        60s             5m",
      ].join("\n"),
    );
  });
});
