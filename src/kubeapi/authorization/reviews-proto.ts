// The authorization reviews in protobuf (kubectl 1.32+): upstream's authorization/v1 messages in the API server's
// envelope (k8s-proto.ts). Apart from reviews.ts so that the generated messages load only for a protobuf review.
import { create } from "@bufbuild/protobuf";
import {
  NonResourceRuleSchema,
  ResourceRuleSchema,
  SelfSubjectAccessReviewSchema,
  SelfSubjectRulesReviewSchema,
  SubjectAccessReviewStatusSchema,
  SubjectRulesReviewStatusSchema,
} from "../../gen/k8s.io/api/authorization/v1/generated_pb.js";
import { ObjectMetaSchema } from "../../gen/k8s.io/apimachinery/pkg/apis/meta/v1/generated_pb.js";
import { decodeEnveloped, encodeEnveloped } from "./k8s-proto.js";
import type { AccessReviewSpec, Rules } from "./reviews.js";

const ACCESS = { apiVersion: "authorization.k8s.io/v1", kind: "SelfSubjectAccessReview" };
const RULES = { apiVersion: "authorization.k8s.io/v1", kind: "SelfSubjectRulesReview" };

export function decodeAccessReview(body: Uint8Array): AccessReviewSpec {
  const m = decodeEnveloped(body, SelfSubjectAccessReviewSchema, ACCESS);
  return { resourceAttributes: m.spec?.resourceAttributes, nonResourceAttributes: m.spec?.nonResourceAttributes };
}

export function encodeAccessReview(spec: AccessReviewSpec, status: { allowed: boolean; reason: string }) {
  const msg = create(SelfSubjectAccessReviewSchema, {
    metadata: create(ObjectMetaSchema, {}),
    spec: { resourceAttributes: spec.resourceAttributes, nonResourceAttributes: spec.nonResourceAttributes },
    status: create(SubjectAccessReviewStatusSchema, status),
  });
  return encodeEnveloped(SelfSubjectAccessReviewSchema, msg, ACCESS);
}

export function decodeRulesReview(body: Uint8Array): string | undefined {
  return decodeEnveloped(body, SelfSubjectRulesReviewSchema, RULES).spec?.namespace;
}

export function encodeRulesReview(namespace: string | undefined, rules: Rules) {
  const msg = create(SelfSubjectRulesReviewSchema, {
    metadata: create(ObjectMetaSchema, {}),
    spec: { namespace },
    status: create(SubjectRulesReviewStatusSchema, {
      resourceRules: rules.resourceRules.map((r) => create(ResourceRuleSchema, r)),
      nonResourceRules: rules.nonResourceRules.map((r) => create(NonResourceRuleSchema, r)),
      incomplete: false,
    }),
  });
  return encodeEnveloped(SelfSubjectRulesReviewSchema, msg, RULES);
}
