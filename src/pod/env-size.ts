// How large a container's env values, command and args become after kubelet's $(VAR) expansion, computed
// from lengths alone so that a pod whose variables double each other (V2 = "$(V1)$(V1)", ...) is refused at
// validation in time linear in its size, before anything is expanded and before any runtime call.
// The scan mirrors `expand` in src/kuberuntime/expansion.ts step for step (a property test holds them equal).
//
// Limits: Linux's execve refuses any single argv or envp string over MAX_ARG_STRLEN (32 pages: 128 KiB), so
// a longer value could never reach the process; and all of them together must stay under execve's ARG_MAX
// (a quarter of the 8 MiB default stack: 2 MiB), so 1 MiB per container, which is also far inside the
// 16 MiB gRPC message that carries the container config to the runtime.
import type { EnvFromSource, EnvVarSource } from "./sources.js";

export const MAX_EXPANDED_VALUE_BYTES = 128 * 1024;
export const MAX_EXPANDED_CONTAINER_BYTES = 1024 * 1024;

export interface SizeIssue {
  /** Under the container: ["env", 3, "value"], ["args", 0], or [] for the whole container. */
  path: (string | number)[];
  message: string;
}

/** UTF-8 byte length of a string (what the runtime is sent), without encoding it. */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3; // BMP, or a lone surrogate (encoded as U+FFFD)
  }
  return n;
}

/** The UTF-8 length `expand(input, vars)` would have, given each defined variable's expanded length. */
export function expandedLength(input: string, lengths: ReadonlyMap<string, number>): number {
  if (!input.includes("$")) return utf8Length(input);
  let n = 0;
  let literal = 0; // start of the pending literal run
  let i = 0;
  for (; i < input.length; i++) {
    if (input[i] !== "$" || i + 1 >= input.length) continue;
    const nx = input[i + 1];
    if (nx === "$") {
      n += utf8Length(input.slice(literal, i)) + 1;
      literal = ++i + 1;
    } else if (nx === "(") {
      const close = input.indexOf(")", i + 2);
      if (close < 0) break;
      const name = input.slice(i + 2, close);
      n += utf8Length(input.slice(literal, i)) + (lengths.get(name) ?? utf8Length(name) + 3);
      i = close;
      literal = close + 1;
    }
  }
  return n + utf8Length(input.slice(literal));
}

const kib = (n: number) => `${n / 1024} KiB`;

/** The lengths of env values from outside the spec (ConfigMaps, Secrets, the downward API), as the engine's
 * EnvResolver would resolve them: without these a name defined only by envFrom reads as a literal `$(NAME)`
 * and a valueFrom as empty, which is the spec alone (schema.ts) and an underestimate once objects come in. */
export interface EnvSourceLengths {
  /** One envFrom entry's variables (prefixed) and their UTF-8 lengths; none for a missing optional object. */
  from(source: EnvFromSource): [string, number][];
  /** A valueFrom's UTF-8 length (at most: the downward API's runtime values are bounded, not known);
   * undefined for a missing optional reference (the variable is left out). */
  value(source: EnvVarSource): number | undefined;
}

/** The parts of a container that expand. Declared here, below the schema that calls expansionIssues, so that the
 * schema imports this module and not the other way round (schema.ts's Container satisfies it). */
export interface ExpandingContainer {
  env?: readonly { name: string; value: string; valueFrom?: EnvVarSource | undefined }[] | undefined;
  envFrom?: readonly EnvFromSource[] | undefined;
  command?: readonly string[] | undefined;
  args?: readonly string[] | undefined;
}

/** Whether this container's expanded env values, command and args stay within the limits. Reports the
 * first value over the per-value limit and the container total, not every value of a runaway chain.
 * With `sources`, envFrom and valueFrom take their resolved lengths, in the order containerEnv sets them. */
export function expansionIssues(container: ExpandingContainer, sources?: EnvSourceLengths): SizeIssue[] {
  const issues: SizeIssue[] = [];
  const lengths = new Map<string, number>();
  let total = 0;
  let valueReported = false;
  const tooLong = (path: SizeIssue["path"], bytes: number, what = "expands ($(VAR) references) to") => {
    if (bytes <= MAX_EXPANDED_VALUE_BYTES || valueReported) return;
    valueReported = true;
    const shown = Number.isFinite(bytes) && bytes < 2 ** 53 ? `${bytes} bytes` : "an unbounded size";
    issues.push({
      path,
      message: `${what} ${shown}; at most ${kib(MAX_EXPANDED_VALUE_BYTES)} per value (Linux's MAX_ARG_STRLEN)`,
    });
  };
  if (sources)
    (container.envFrom ?? []).forEach((f, k) => {
      for (const [name, len] of sources.from(f)) {
        lengths.set(name, len);
        tooLong(["envFrom", k], len, `sets ${JSON.stringify(name)} to a value of`);
      }
    });
  (container.env ?? []).forEach((e, j) => {
    if (sources && e.value === "" && e.valueFrom) {
      const len = sources.value(e.valueFrom);
      if (len === undefined) return;
      lengths.set(e.name, len);
      tooLong(["env", j, "valueFrom"], len, "resolves to a value of");
      return;
    }
    const len = expandedLength(e.value, lengths);
    lengths.set(e.name, len);
    tooLong(["env", j, "value"], len);
  });
  for (const [name, len] of lengths) total += utf8Length(name) + 1 + len;
  for (const field of ["command", "args"] as const)
    (container[field] ?? []).forEach((s, j) => {
      const len = expandedLength(s, lengths);
      total += len;
      tooLong([field, j], len);
    });
  if (total > MAX_EXPANDED_CONTAINER_BYTES)
    issues.push({
      path: ["env"],
      message: `env, command and args expand to more than ${kib(MAX_EXPANDED_CONTAINER_BYTES)} in all; at most ${kib(MAX_EXPANDED_CONTAINER_BYTES)} per container`,
    });
  return issues;
}
