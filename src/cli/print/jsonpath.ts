// kubectl's -o jsonpath templates (k8s.io/client-go/util/jsonpath), the part people use: text around {…}
// actions; fields (.a.b, ['a']), indexes ([0], [-1]), wildcards ([*], .*), {range …}…{end}, "quoted" text with
// \n and \t, and @ for the current item. Missing keys print nothing (kubectl get's default,
// --allow-missing-template-keys=true). Filters ([?(…)]) and recursive descent (..) are refused by name.

type Node = { text: string } | { expr: Step[] } | { range: Step[]; body: Node[] };
type Step = { field: string } | { index: number } | { all: true };

export class JsonPathError extends Error {}

export function parseJsonPath(template: string): Node[] {
  const tokens: ({ text: string } | { action: string })[] = [];
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf("{", i);
    if (open < 0) {
      tokens.push({ text: template.slice(i) });
      break;
    }
    if (open > i) tokens.push({ text: template.slice(i, open) });
    const close = findClose(template, open);
    tokens.push({ action: template.slice(open + 1, close).trim() });
    i = close + 1;
  }
  const [nodes, rest] = build(tokens, 0);
  if (rest < tokens.length) throw new JsonPathError("{end} without {range}");
  return nodes;
}

function findClose(s: string, open: number): number {
  let quote = false;
  for (let j = open + 1; j < s.length; j++) {
    if (s[j] === "\\" && quote) j++;
    else if (s[j] === '"') quote = !quote;
    else if (s[j] === "}" && !quote) return j;
  }
  throw new JsonPathError(`unclosed { at ${open}`);
}

function build(tokens: ({ text: string } | { action: string })[], from: number): [Node[], number] {
  const out: Node[] = [];
  let i = from;
  while (i < tokens.length) {
    const t = tokens[i]!;
    if ("text" in t) {
      out.push(t);
      i++;
      continue;
    }
    const a = t.action;
    if (a === "end") return [out, i];
    if (a.startsWith("range ")) {
      const [body, end] = build(tokens, i + 1);
      if (end >= tokens.length) throw new JsonPathError("{range} without {end}");
      out.push({ range: steps(a.slice(6).trim()), body });
      i = end + 1;
      continue;
    }
    if (a.startsWith('"')) out.push({ text: unquote(a) });
    else out.push({ expr: steps(a) });
    i++;
  }
  return [out, i];
}

function unquote(a: string): string {
  if (!/^"(?:[^"\\]|\\.)*"$/.test(a)) throw new JsonPathError(`bad quoted text ${a}`);
  return a.slice(1, -1).replace(/\\(.)/g, (_, c: string) => ({ n: "\n", t: "\t", r: "\r" })[c] ?? c);
}

function steps(expr: string): Step[] {
  let e = expr.trim();
  if (e.startsWith("$")) e = e.slice(1);
  else if (e.startsWith("@")) e = e.slice(1);
  const out: Step[] = [];
  const re = /^(?:\.\.|\.(\*)|\.([^.[\]]+)|\[\*\]|\[(-?\d+)\]|\[['"]([^'"]+)['"]\]|\[\?)/;
  while (e.length) {
    const m = re.exec(e);
    if (!m) throw new JsonPathError(`cannot parse "${expr}" at "${e}"`);
    if (m[0] === "..") throw new JsonPathError("recursive descent (..) is not supported");
    if (m[0] === "[?") throw new JsonPathError("filters ([?(...)]) are not supported");
    if (m[1] || m[0] === "[*]") out.push({ all: true });
    else if (m[2] !== undefined) out.push({ field: m[2] });
    else if (m[3] !== undefined) out.push({ index: Number(m[3]) });
    else out.push({ field: m[4]! });
    e = e.slice(m[0].length);
  }
  return out;
}

function walk(values: unknown[], path: Step[]): unknown[] {
  let cur = values;
  for (const s of path) {
    const next: unknown[] = [];
    for (const v of cur) {
      if ("all" in s) {
        if (Array.isArray(v)) next.push(...v);
        else if (v && typeof v === "object") next.push(...Object.values(v));
      } else if ("index" in s) {
        if (Array.isArray(v)) {
          const x = v[s.index < 0 ? v.length + s.index : s.index];
          if (x !== undefined) next.push(x);
        }
      } else if (v && typeof v === "object" && !Array.isArray(v) && s.field in v)
        next.push((v as Record<string, unknown>)[s.field]);
    }
    cur = next;
  }
  return cur;
}

const show = (v: unknown) =>
  typeof v === "string" ? v : v === null ? "null" : typeof v === "object" ? JSON.stringify(v) : String(v);

function run(nodes: Node[], current: unknown): string {
  let out = "";
  for (const n of nodes) {
    if ("text" in n) out += n.text;
    else if ("expr" in n) out += walk([current], n.expr).map(show).join(" ");
    else for (const item of walk([current], n.range)) out += run(n.body, item);
  }
  return out;
}

export function jsonPath(template: string, data: unknown): string {
  return run(parseJsonPath(template), data);
}
