// Real applications' manifests (test/fixtures/manifests/apps/, sources in the README there): guestbook-go (its
// ReplicationControllers and a Service), podinfo with its HPA, the Kubernetes docs' HPA, ReplicaSet-HPA,
// ReplicationController and PodDisruptionBudget examples, and a Helm-rendered chart (data: null, the nulls of a Go
// client, a ServiceMonitor and a PrometheusRule). None is refused whole for a kind or a null: each is taken for the
// kinds a node runs, and everything else is a warning naming it.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseYamlStream } from "../../../src/http/parse-yaml.js";
import { bodyFromDocuments } from "../../../src/pod/bundle.js";

const DIR = join(import.meta.dirname, "..", "..", "fixtures", "manifests", "apps");
const node = { nodeName: "node-a", serviceAccountTokens: "drop" as const };

/** What each file gives: the kinds taken, and the warnings (their start). */
const expected: Record<string, { kinds: string[]; warnings: string[] }> = {
  "frontend-hpa-rs.yaml": { kinds: ["ReplicaSet", "HorizontalPodAutoscaler"], warnings: [] },
  "guestbook-go.yaml": {
    kinds: ["ReplicationController", "ReplicationController", "ReplicationController"],
    warnings: [],
  },
  "helm-rendered.yaml": {
    kinds: ["Deployment"],
    warnings: [
      'documents[2]: skipped: custom resource monitoring.coreos.com/v1 ServiceMonitor "demo"',
      'documents[3]: skipped: custom resource monitoring.coreos.com/v1 PrometheusRule "demo"',
    ],
  },
  "php-apache.yaml": {
    kinds: ["Deployment", "HorizontalPodAutoscaler"],
    warnings: [],
  },
  "podinfo.yaml": {
    kinds: ["Deployment", "HorizontalPodAutoscaler"],
    warnings: [
      'documents[1]: HorizontalPodAutoscaler "podinfo": autoscaling/v2beta2 HorizontalPodAutoscaler is deprecated',
    ],
  },
  "replication.yaml": { kinds: ["ReplicationController"], warnings: [] },
  "zookeeper-pdb-maxunavailable.yaml": { kinds: ["PodDisruptionBudget"], warnings: [] },
  "zookeeper-pdb-minavailable.yaml": { kinds: ["PodDisruptionBudget"], warnings: [] },
};

describe("real applications' manifests: none refused whole for a kind or a null", () => {
  const files = readdirSync(DIR)
    .filter((f) => f.endsWith(".yaml"))
    .sort();
  it("every file is listed here", () => {
    expect(files).toEqual(Object.keys(expected).sort());
  });
  for (const f of files)
    it(f, () => {
      const docs = parseYamlStream(readFileSync(join(DIR, f), "utf8"));
      const b = bodyFromDocuments(docs, node);
      // Services are left out of the comparison (they are taken since issue #37; test/services-*.test.ts covers
      // them); either way a Service never refuses the file.
      const kinds = b.workloads.map((w) => w.workload.kind).filter((k) => k !== "Service");
      expect(kinds).toEqual(expected[f]!.kinds);
      const warnings = b.warnings.filter((w) => !/ v1 Service "/.test(w));
      expect(warnings).toHaveLength(expected[f]!.warnings.length);
      warnings.forEach((w, i) => expect(w.startsWith(expected[f]!.warnings[i]!), w).toBe(true));
    });
  it("autoscaling/v1 is read as v2 (targetCPUUtilizationPercentage → one cpu Utilization metric)", () => {
    const b = bodyFromDocuments(parseYamlStream(readFileSync(join(DIR, "frontend-hpa-rs.yaml"), "utf8")), node);
    const hpa = b.workloads[1]!.workload;
    expect(hpa.apiVersion).toBe("autoscaling/v2");
    expect(hpa.kind === "HorizontalPodAutoscaler" && hpa.spec.metrics).toEqual([
      { type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } } },
    ]);
  });
});
