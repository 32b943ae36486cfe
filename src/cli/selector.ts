// kubectl's -l label selectors (k8s.io/apimachinery/pkg/labels/selector.go Parse): comma-separated
// requirements, all of which must hold: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` (exists),
// `!k` (does not exist). As upstream, `k!=v` and `notin` also match objects without the label.
import { fail } from "./args.js";

type Requirement = { key: string; op: "=" | "!=" | "in" | "notin" | "exists" | "!"; values: string[] };
export type Selector = (labels: Record<string, string> | undefined) => boolean;

export function parseSelector(text: string): Selector {
  const reqs: Requirement[] = [];
  // Split on commas outside parentheses.
  const parts: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      parts.push(cur);
      cur = "";
    } else cur += ch;
  }
  parts.push(cur);
  for (const raw of parts) {
    const p = raw.trim();
    if (!p) fail(`-l "${text}": an empty requirement`);
    let m: RegExpExecArray | null;
    if ((m = /^!\s*([\w./-]+)$/.exec(p))) reqs.push({ key: m[1]!, op: "!", values: [] });
    else if ((m = /^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$/.exec(p)))
      reqs.push({ key: m[1]!, op: m[2] === "!=" ? "!=" : "=", values: [m[3]!] });
    else if ((m = /^([\w./-]+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(p)))
      reqs.push({ key: m[1]!, op: m[2] as "in", values: m[3]!.split(",").map((v) => v.trim()) });
    else if ((m = /^([\w./-]+)$/.exec(p))) reqs.push({ key: m[1]!, op: "exists", values: [] });
    else fail(`-l "${text}": cannot parse "${p}" (use k=v, k!=v, k in (a,b), k notin (a,b), k or !k)`);
  }
  return (labels) =>
    reqs.every((r) => {
      const has = labels !== undefined && Object.hasOwn(labels, r.key);
      const v = has ? labels![r.key]! : undefined;
      switch (r.op) {
        case "=":
        case "in":
          return has && r.values.includes(v!);
        case "!=":
        case "notin":
          return !has || !r.values.includes(v!);
        case "exists":
          return has;
        case "!":
          return !has;
      }
    });
}
