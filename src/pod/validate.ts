// Validation of an untrusted pod against the schema: every failing field is named with its reason, in the
// path form kubectl users read (`spec.containers[0].name`). The HTTP layer renders InvalidPodError as a
// 400 problem; the CLI prints it.
import type { z } from "zod";
import { Pod } from "./schema.js";

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

/** zod issues → `spec.containers[0].name: reason`, one per failing field, unknown keys named. For a union (a
 * volume is hostPath or emptyDir) the errors of the closest branch are given, not a bare "no match". */
export function fieldErrors(error: { issues: Issue[] }, prefix = ""): FieldError[] {
  const out: FieldError[] = [];
  const fmt = (path: PropertyKey[]) =>
    path.reduce<string>((acc, k) => (typeof k === "number" ? `${acc}[${k}]` : acc ? `${acc}.${String(k)}` : String(k)), prefix);
  const walk = (issues: Issue[], base: PropertyKey[]) => {
    for (const issue of issues) {
      const path = [...base, ...issue.path];
      if (issue.code === "unrecognized_keys") {
        for (const key of issue.keys) out.push({ path: fmt([...path, key]), message: `unknown field "${key}" (not supported by podsync; remove it)` });
      } else if (issue.code === "invalid_union" && issue.errors.length > 0) {
        const closest = issue.errors.reduce((a, b) => (b.length < a.length ? b : a));
        if (closest.length === 0) out.push({ path: fmt(path), message: issue.message });
        else walk(closest, path);
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
  const r = Pod.safeParse(input);
  if (r.success) return r.data;
  throw new InvalidPodError(fieldErrors(r.error, prefix));
}
