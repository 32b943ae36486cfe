// Environment variables and kubelet's $(VAR) expansion in env values, command and args.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Container } from "../pod/schema.js";
import type { EnvFromSource, EnvVarSource } from "../pod/sources.js";
import type { KeyValueSchema } from "../gen/runtime/v1/api_pb.js";
import { MAX_EXPANDED_VALUE_BYTES } from "../pod/env-size.js";

/** Expansion past the bound validation enforces (env-size.ts): the container's start fails with this error. */
export class ExpansionTooLargeError extends Error {}

/** third_party/forked/golang/expansion: $(VAR) is replaced when VAR is defined, $$ escapes a $.
 * Validation bounds the result (env-size.ts, env-objects-size.ts); the cap here is defence in depth, so that
 * whatever slipped past it fails one start with a clear error, never builds hundreds of MB. A UTF-16 length
 * over the cap is a UTF-8 length over it too, so nothing validation accepts is stopped here. */
export function expand(
  input: string,
  vars: Pick<ReadonlyMap<string, string>, "get">,
  limit = MAX_EXPANDED_VALUE_BYTES,
): string {
  if (!input.includes("$")) return input;
  let out = "";
  const check = () => {
    if (out.length > limit)
      throw new ExpansionTooLargeError(
        `a $(VAR) reference expands past ${limit / 1024} KiB (Linux's MAX_ARG_STRLEN); refused before it is built`,
      );
  };
  for (let i = 0; i < input.length; i++) {
    const ch = input[i]!;
    if (ch !== "$" || i + 1 >= input.length) {
      out += ch;
      continue;
    }
    const nx = input[i + 1]!;
    if (nx === "$") {
      out += "$";
      i++;
    } else if (nx === "(") {
      const close = input.indexOf(")", i + 2);
      if (close < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      const val = vars.get(name);
      out += val ?? `$(${name})`;
      check();
      i = close;
    } else {
      out += ch;
    }
  }
  return out;
}

/** Where env values from outside the container spec come from (env-sources.ts). */
export interface EnvResolver {
  /** One envFrom entry's variables (prefixed); none for an optional object that is missing. */
  from(source: EnvFromSource): [string, string][];
  /** A valueFrom's value; undefined for an optional reference that is missing (the variable is left out). */
  value(source: EnvVarSource): string | undefined;
}

/** makeEnvironmentVariables: envFrom first, then env in order, each value able to refer to the variables
 * defined before it (later ones win); a valueFrom is resolved, not expanded. Without a resolver (the
 * prober's ExpandContainerCommandOnlyStatic) a valueFrom variable is empty. */
export function containerEnv(
  container: Container,
  resolver?: EnvResolver,
  /** The Service variables (service-env.ts): a $(VAR) may name one, and those the container does not set are
   * added after its own (makeEnvironmentVariables' mappingFunc over tmpEnv, then serviceEnv). */
  serviceEnv?: ReadonlyMap<string, string>,
): Map<string, string> {
  const vars = new Map<string, string>();
  if (resolver) for (const f of container.envFrom ?? []) for (const [k, v] of resolver.from(f)) vars.set(k, v);
  const lookup: Pick<ReadonlyMap<string, string>, "get"> = serviceEnv?.size
    ? { get: (k: string) => vars.get(k) ?? serviceEnv.get(k) }
    : vars;
  for (const e of container.env ?? []) {
    if (e.value === "" && e.valueFrom && resolver) {
      const v = resolver.value(e.valueFrom);
      if (v !== undefined) vars.set(e.name, v);
    } else vars.set(e.name, expand(e.value, lookup));
  }
  for (const [k, v] of serviceEnv ?? []) if (!vars.has(k)) vars.set(k, v);
  return vars;
}

const utf8 = new TextEncoder();
// CRI KeyValue.value is bytes since cri-api 1.36 (binary env values); ours are UTF-8 text.
export const toKeyValues = (vars: Map<string, string>): MessageInitShape<typeof KeyValueSchema>[] =>
  [...vars].map(([key, value]) => ({ key, value: utf8.encode(value) }));

/** kubecontainer.ExpandContainerVolumeMounts plus makeMounts' checks: a volumeMount's subPathExpr expanded from
 * the container's environment; every variable it names must have a value, and the result must be a relative
 * path without "..". Throws kubelet's message (the container then fails with CreateContainerConfigError). */
export function expandSubPathExpr(expr: string, vars: ReadonlyMap<string, string>): string {
  const missing = new Set<string>();
  const recording = { get: (k: string) => (vars.get(k) ? vars.get(k) : (missing.add(k), "")) };
  const subPath = expand(expr, recording);
  if (missing.size) throw new Error(`missing value for ${[...missing].sort().join(", ")}`);
  if (subPath.startsWith("/")) throw new Error(`error SubPath \`${subPath}\` must not be an absolute path`);
  if (subPath.split("/").includes(".."))
    throw new Error(`unable to provision SubPath \`${subPath}\`: must not contain '..'`);
  return subPath;
}
