// Label and field selectors as the API server parses them (apimachinery/pkg/labels/selector.go Parse,
// apimachinery/pkg/fields/selector.go ParseSelector). A selector that does not parse is an error naming the
// part that does not (the route answers 400 BadRequest); a field the resource does not index is refused as
// the API server refuses it ("field label not supported").

export class SelectorError extends Error {}

type Op = "=" | "!=" | "in" | "notin" | "exists" | "!" | "gt" | "lt";
interface Requirement {
  key: string;
  op: Op;
  values: string[];
}

export interface LabelSelector {
  matches(labels: Readonly<Record<string, string>> | undefined): boolean;
  /** No requirement: everything matches. */
  readonly empty: boolean;
}

const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function checkKey(key: string): void {
  const slash = key.lastIndexOf("/");
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  if (prefix !== undefined && (!prefix || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    throw new SelectorError(
      `unable to parse requirement: key ${JSON.stringify(key)}: prefix part must be a DNS subdomain (lower case alphanumerics, '-' and '.')`,
    );
  if (!name || name.length > 63 || !NAME.test(name))
    throw new SelectorError(
      `unable to parse requirement: key ${JSON.stringify(key)}: name part must be 1-63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric`,
    );
}

function checkValue(key: string, v: string): void {
  if (v !== "" && (v.length > 63 || !NAME.test(v)))
    throw new SelectorError(
      `unable to parse requirement: values[0][${key}]: Invalid value: ${JSON.stringify(v)}: a valid label value must be empty or 1-63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric`,
    );
}

type Token = { kind: "id" | "op" | "(" | ")" | "," | "!" | "end"; text: string };

/** labels' lexer: identifiers run until whitespace or a special character. */
function lex(s: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
      continue;
    }
    if (c === "(" || c === ")" || c === ",") {
      out.push({ kind: c, text: c });
      i++;
      continue;
    }
    const two = s.slice(i, i + 2);
    if (two === "==" || two === "!=") {
      out.push({ kind: "op", text: two });
      i += 2;
      continue;
    }
    if (c === "=" || c === ">" || c === "<") {
      out.push({ kind: "op", text: c });
      i++;
      continue;
    }
    if (c === "!") {
      out.push({ kind: "!", text: c });
      i++;
      continue;
    }
    let j = i;
    while (j < s.length && !" \t\n\r(),=!<>".includes(s[j]!)) j++;
    out.push({ kind: "id", text: s.slice(i, j) });
    i = j;
  }
  out.push({ kind: "end", text: "" });
  return out;
}

export function parseLabelSelector(s: string | undefined): LabelSelector {
  const reqs: Requirement[] = [];
  if (s?.trim()) {
    const t = lex(s);
    let p = 0;
    const next = () => t[p++]!;
    const peek = () => t[p]!;
    const expect = (what: string, ok: boolean, tok: Token) => {
      if (!ok)
        throw new SelectorError(
          `unable to parse requirement: found ${JSON.stringify(tok.text || "end of string")}, expected: ${what}`,
        );
    };
    for (;;) {
      let tok = next();
      if (tok.kind === "!") {
        const key = next();
        expect("identifier after '!'", key.kind === "id", key);
        checkKey(key.text);
        reqs.push({ key: key.text, op: "!", values: [] });
      } else {
        expect("!, identifier", tok.kind === "id", tok);
        const key = tok.text;
        checkKey(key);
        const op = peek();
        if (op.kind === "," || op.kind === "end") reqs.push({ key, op: "exists", values: [] });
        else if (op.kind === "op") {
          next();
          const v = peek().kind === "id" ? next().text : "";
          if (op.text === ">" || op.text === "<") {
            if (!/^-?\d+$/.test(v))
              throw new SelectorError(
                `unable to parse requirement: for 'gt', 'lt' operators, the value must be an integer (got ${JSON.stringify(v)})`,
              );
            reqs.push({ key, op: op.text === ">" ? "gt" : "lt", values: [v] });
          } else {
            checkValue(key, v);
            reqs.push({ key, op: op.text === "!=" ? "!=" : "=", values: [v] });
          }
        } else if (op.kind === "id" && (op.text === "in" || op.text === "notin")) {
          next();
          tok = next();
          expect("'('", tok.kind === "(", tok);
          const values: string[] = [];
          for (;;) {
            const v = peek().kind === "id" ? next().text : "";
            checkValue(key, v);
            values.push(v);
            tok = next();
            if (tok.kind === ")") break;
            expect("',' or ')'", tok.kind === ",", tok);
          }
          reqs.push({ key, op: op.text, values });
        } else expect("=, !=, ==, in, notin", false, op);
      }
      tok = next();
      if (tok.kind === "end") break;
      expect("','", tok.kind === ",", tok);
    }
  }
  return {
    empty: reqs.length === 0,
    matches(labels) {
      const l = labels ?? {};
      return reqs.every((r) => {
        const has = Object.hasOwn(l, r.key);
        const v = l[r.key];
        switch (r.op) {
          case "exists":
            return has;
          case "!":
            return !has;
          case "=":
            return has && v === r.values[0];
          case "!=":
            return !has || v !== r.values[0];
          case "in":
            return has && r.values.includes(v!);
          case "notin":
            return !has || !r.values.includes(v!);
          case "gt":
          case "lt": {
            if (!has || !/^-?\d+$/.test(v!)) return false;
            return r.op === "gt" ? Number(v) > Number(r.values[0]) : Number(v) < Number(r.values[0]);
          }
        }
      });
    },
  };
}

export interface FieldSelector<T> {
  matches(obj: T): boolean;
  /** The exact value a field must have (`f=v` or `f==v`), when the selector says so: lets a route narrow first. */
  equals(field: string): string | undefined;
}

/** fields.ParseSelector over the fields a resource indexes (`fields`: the field → its value in an object). */
export function parseFieldSelector<T>(
  s: string | undefined,
  fields: Readonly<Record<string, (obj: T) => string>>,
  resource: string,
): FieldSelector<T> {
  const terms: { field: string; neg: boolean; value: string }[] = [];
  if (s?.trim())
    for (const part of splitTerms(s)) {
      const m = /^([^=!]+?)\s*(==|!=|=)\s*(.*)$/.exec(part.trim());
      if (!m) throw new SelectorError(`invalid selector: '${s}'; can't understand '${part}'`);
      const field = m[1]!.trim();
      if (!Object.hasOwn(fields, field))
        throw new SelectorError(
          `field label not supported: ${field} (${resource} can be selected by ${Object.keys(fields).join(", ")})`,
        );
      terms.push({ field, neg: m[2] === "!=", value: unescapeValue(m[3]!) });
    }
  return {
    matches: (obj) => terms.every((t) => (fields[t.field]!(obj) === t.value) !== t.neg),
    equals: (field) => terms.find((t) => t.field === field && !t.neg)?.value,
  };
}

/** Terms are comma separated; `\,` `\=` `\\` escape (fields.EscapeValue). */
function splitTerms(s: string): string[] {
  const out: string[] = [];
  let cur = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "\\" && i + 1 < s.length) {
      cur += c + s[++i];
      continue;
    }
    if (c === ",") {
      out.push(cur);
      cur = "";
    } else cur += c;
  }
  out.push(cur);
  return out;
}

const unescapeValue = (v: string) => v.replace(/\\(.)/g, "$1");
