// kubectl's -o: the table (default, or wide), name, json, yaml, jsonpath=TEMPLATE.
import { usage } from "../args.js";
import { table } from "../output.js";
import type { KubeObject, Resource } from "../resources/resource.js";
import { jsonPath, JsonPathError } from "./jsonpath.js";
import { workloadKindNamed } from "../resources/index.js";
import { qualifiedKind } from "../workloads/ref.js";

export type Format =
  | { kind: "table"; wide: boolean }
  | { kind: "name" }
  | { kind: "json" }
  | { kind: "yaml" }
  | { kind: "jsonpath"; template: string };

export const OUTPUT_HELP = "wide, name, json, yaml or jsonpath=TEMPLATE";

export function parseFormat(o: string | undefined, command: string): Format {
  if (o === undefined) return { kind: "table", wide: false };
  const v = o.replace(/^=/, "");
  if (v === "wide") return { kind: "table", wide: true };
  if (v === "name" || v === "json" || v === "yaml") return { kind: v };
  const m = /^jsonpath=(.*)$/s.exec(v);
  if (m) {
    const template = m[1]!.replace(/^'(.*)'$/s, "$1");
    try {
      jsonPath(template, {});
    } catch (e) {
      if (e instanceof JsonPathError) usage(`-o jsonpath: ${e.message}`, command);
      throw e;
    }
    return { kind: "jsonpath", template };
  }
  return usage(`-o must be one of ${OUTPUT_HELP}, not "${v}"`, command);
}

export interface PrintOptions {
  resource: Resource;
  /** A single object asked for by name prints as itself; otherwise a v1 List. */
  single: boolean;
  /** -A: the NAMESPACE column. */
  allNamespaces: boolean;
  headers: boolean;
  now: number;
  node: string;
}

/** The objects in the format, without a trailing newline ("" for none). */
/** kubectl -o name's prefix: the kind with its API group (`deployment.apps`, `job.batch`; `pod` for the core). */
function namePrefix(kind: string): string {
  const k = workloadKindNamed(kind);
  return k ? qualifiedKind(k) : kind.toLowerCase();
}

export async function render(objs: readonly KubeObject[], f: Format, o: PrintOptions): Promise<string> {
  const data =
    o.single && objs.length === 1
      ? objs[0]
      : { apiVersion: "v1", kind: "List", items: objs, metadata: { resourceVersion: "" } };
  switch (f.kind) {
    case "json":
      return JSON.stringify(data, null, 4);
    case "yaml":
      return (await import("yaml")).stringify(data).trimEnd();
    case "name":
      return objs.map((x) => `${namePrefix(o.resource.kind)}/${x.metadata.name}`).join("\n");
    case "jsonpath":
      return jsonPath(f.template, data);
    case "table":
      return tableOf(objs, f.wide, o);
  }
}

function tableOf(objs: readonly KubeObject[], wide: boolean, o: PrintOptions): string {
  const ns = (cells: string[], namespace: string) => (o.allNamespaces ? [namespace, ...cells] : cells);
  const rows = objs.map((x) => ns(o.resource.row(x, { wide, now: o.now, node: o.node }), x.metadata.namespace ?? ""));
  if (!rows.length) return ""; // kubectl prints no header for nothing ("No resources found" goes to stderr)
  return table(o.headers ? [ns(o.resource.header({ wide }), "NAMESPACE"), ...rows] : rows);
}

/** One row as the table prints it (for --watch's lines, aligned to the header's widths where they fit). */
export function rowLine(x: KubeObject, wide: boolean, o: PrintOptions): string {
  return tableOf([x], wide, { ...o, headers: false });
}
