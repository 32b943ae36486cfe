// Admission against the node owner's policy, after the signature and the schema and before any runtime
// call: a signer cannot ask for more than the node allows.
import type { Pod } from "../pod/schema.js";
import { evaluatePodSecurity } from "../auth/pod-security.js";
import { formatViolations, type NodePolicy } from "../auth/policy.js";
import { ProblemError } from "./problems.js";

export function admit(pod: Pod, policy: NodePolicy, prefix = ""): void {
  const violations = evaluatePodSecurity(pod, policy);
  if (violations.length === 0) return;
  throw new ProblemError("policy", formatViolations(policy.level, violations), {
    level: policy.level,
    errors: violations.map((v) => ({ path: prefix + v.path, message: `${v.rule}: ${v.message}` })),
  });
}
