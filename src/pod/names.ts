// The API server's name and label rules (k8s.io/apimachinery validation), shared by every schema that names
// something: DNS-1123 labels and subdomains, qualified names (label and annotation keys), label values.
import { z } from "zod";

export const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

export const dns1123Label = (what: string) =>
  z
    .string()
    .max(63, `${what} must be no more than 63 characters`)
    .regex(
      DNS1123_LABEL,
      `${what} must be a DNS-1123 label: lower case alphanumerics or '-', starting and ending with an alphanumeric`,
    );

export const dns1123Subdomain = (what: string) =>
  z
    .string()
    .max(253, `${what} must be no more than 253 characters`)
    .regex(
      DNS1123_SUBDOMAIN,
      `${what} must be a DNS-1123 subdomain: lower case alphanumerics, '-' or '.', starting and ending with an alphanumeric`,
    );

/** Why `key` is not a qualified name (`[prefix/]name`), or undefined when it is. */
export function validQualifiedKey(key: string): string | undefined {
  const parts = key.split("/");
  if (parts.length > 2) return "a qualified name has at most one '/'";
  const name = parts.length === 2 ? parts[1]! : parts[0]!;
  if (parts.length === 2 && (parts[0]!.length > 253 || !DNS1123_SUBDOMAIN.test(parts[0]!)))
    return "the prefix must be a DNS-1123 subdomain";
  if (name.length === 0 || name.length > 63 || !QUALIFIED_NAME.test(name))
    return "the name part must be 63 characters or less, alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric";
  return undefined;
}

export const LABEL_VALUE_RULE =
  "63 characters or less, alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric";
export const validLabelValue = (v: string) => v.length <= 63 && LABEL_VALUE.test(v);

/** A label or annotation key, or another field that takes a qualified name (a node selector's key). */
export const qualifiedName = (what: string) =>
  z.string().superRefine((k, ctx) => {
    const bad = validQualifiedKey(k);
    if (bad) ctx.addIssue({ code: "custom", message: `invalid ${what}: ${bad}` });
  });

export const labels = z.record(z.string(), z.string()).superRefine((rec, ctx) => {
  for (const [k, v] of Object.entries(rec)) {
    const bad = validQualifiedKey(k);
    if (bad) ctx.addIssue({ code: "custom", path: [k], message: `invalid label key: ${bad}` });
    if (!validLabelValue(v))
      ctx.addIssue({ code: "custom", path: [k], message: `invalid label value: ${LABEL_VALUE_RULE}` });
  }
});
