// Validation of an untrusted pod against the schema: every failing field is named with its reason, in the
// path form kubectl users read (`spec.containers[0].name`). The HTTP layer renders InvalidPodError as a
// 400 problem; the CLI prints it.
import type { z } from "zod";
import { knownFields, nearest } from "./field-names.js";
import { Pod } from "./schema.js";
import { withoutNulls } from "./nulls.js";

export interface FieldError {
  path: string;
  message: string;
}

export class InvalidPodError extends Error {
  constructor(readonly errors: FieldError[]) {
    super(`${errors.length} invalid field(s): ${errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`);
  }
}

type Issue = z.core.$ZodIssue;

/** zod issues → `spec.containers[0].name: reason`, one per failing field, unknown keys named (with the nearest
 * known field of `schema` there, for a typo). A missing required field is kubectl's "Required value". For a union
 * (a volume is hostPath or emptyDir) the errors of the closest branch are given, not a bare "no match"; a field
 * that no branch knows (a gcePersistentDisk volume) is that one error, naming the branches podsync has. */
export function fieldErrors(error: { issues: Issue[] }, prefix = "", schema?: z.ZodType): FieldError[] {
  const out: FieldError[] = [];
  const fmt = (path: PropertyKey[]) =>
    path.reduce<string>(
      (acc, k) => (typeof k === "number" ? `${acc}[${k}]` : acc ? `${acc}.${String(k)}` : String(k)),
      prefix,
    );
  const unknown = (path: PropertyKey[], key: string) => {
    const known = schema ? knownFields(schema, path) : { fields: [], branches: [] };
    const near = nearest(key, known.fields);
    const message = near
      ? `unknown field "${key}" (did you mean "${near}"?)`
      : known.branches.length
        ? `unknown field "${key}": not supported by podsync (supported here: ${known.branches.join(", ")})`
        : `unknown field "${key}" (not supported by podsync; remove it)`;
    out.push({ path: fmt([...path, key]), message });
  };
  const walk = (issues: Issue[], base: PropertyKey[]) => {
    for (const issue of issues) {
      const path = [...base, ...issue.path];
      if (issue.code === "unrecognized_keys") {
        for (const key of issue.keys) unknown(path, key);
      } else if (issue.code === "invalid_union" && issue.errors.length > 0) {
        // A key every branch refuses at the union's own level is the error: the other branch errors (a
        // missing hostPath) are noise.
        const refused = (branch: Issue[]) =>
          new Set(branch.flatMap((i) => (i.code === "unrecognized_keys" && i.path.length === 0 ? i.keys : [])));
        const everywhere = [...refused(issue.errors[0]!)].filter((k) => issue.errors.every((b) => refused(b).has(k)));
        if (everywhere.length) {
          for (const key of everywhere) unknown(path, key);
          continue;
        }
        const closest = issue.errors.reduce((a, b) => (b.length < a.length ? b : a));
        if (closest.length === 0) out.push({ path: fmt(path), message: issue.message });
        else walk(closest, path);
      } else if (issue.code === "invalid_type" && / received undefined$/.test(issue.message)) {
        out.push({ path: fmt(path) || prefix || "(root)", message: "Required value" });
      } else {
        out.push({ path: fmt(path) || prefix || "(root)", message: issue.message });
      }
    }
  };
  walk(error.issues, []);
  return out;
}

/** The pod with API-server defaults applied, or InvalidPodError naming every bad field (paths under `prefix`). */
export function validatePod(input: unknown, prefix = ""): Pod {
  const r = Pod.safeParse(withoutNulls(input));
  if (r.success) return r.data;
  throw new InvalidPodError(fieldErrors(r.error, prefix, Pod));
}
