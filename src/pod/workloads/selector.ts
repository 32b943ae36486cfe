// metav1.LabelSelector: the schema (the API server's ValidateLabelSelector) and matching
// (apimachinery's LabelSelectorAsSelector: matchLabels AND every matchExpression).
import { z } from "zod";
import { labels, qualifiedName } from "../names.js";

export const LabelSelectorRequirement = z
  .strictObject({
    key: qualifiedName("key"),
    operator: z.enum(["In", "NotIn", "Exists", "DoesNotExist"], {
      error: "operator must be In, NotIn, Exists or DoesNotExist",
    }),
    values: z.array(z.string()).optional(),
  })
  .superRefine((r, ctx) => {
    const n = r.values?.length ?? 0;
    if ((r.operator === "In" || r.operator === "NotIn") && n === 0)
      ctx.addIssue({
        code: "custom",
        path: ["values"],
        message: "must be specified when `operator` is 'In' or 'NotIn'",
      });
    if ((r.operator === "Exists" || r.operator === "DoesNotExist") && n > 0)
      ctx.addIssue({
        code: "custom",
        path: ["values"],
        message: "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
      });
  });

export const LabelSelector = z.strictObject({
  matchLabels: labels.optional(),
  matchExpressions: z.array(LabelSelectorRequirement).optional(),
});
export type LabelSelector = z.output<typeof LabelSelector>;

/** Whether `l` satisfies the selector. An empty selector matches everything (as upstream). */
export function selectorMatches(sel: LabelSelector, l: Record<string, string> | undefined): boolean {
  const have = l ?? {};
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (have[k] !== v) return false;
  for (const r of sel.matchExpressions ?? []) {
    const v = have[r.key];
    const ok =
      r.operator === "In"
        ? v !== undefined && r.values!.includes(v)
        : r.operator === "NotIn"
          ? v === undefined || !r.values!.includes(v)
          : r.operator === "Exists"
            ? v !== undefined
            : v === undefined;
    if (!ok) return false;
  }
  return true;
}

/** Whether the selector selects nothing at all (no matchLabels and no expressions): the API server refuses such a
 * selector on a Deployment, ReplicaSet, StatefulSet and DaemonSet ("empty selector is invalid for deployment"). */
export const selectorEmpty = (sel: LabelSelector) =>
  Object.keys(sel.matchLabels ?? {}).length === 0 && (sel.matchExpressions ?? []).length === 0;
