// JSON and YAML bodies → values, with errors that never echo the body. A pod body can hold pull-secret
// passwords, and a parser's own message often quotes the offending input (V8's JSON.parse, yaml's pretty
// errors and warnings), which would carry them into the problem detail and the request log. So a refusal
// says only where (line and column) and a generic reason. YAML warnings (an unknown tag, whose value would
// otherwise be dropped or changed) are refusals too, never lines on stderr.
import { LineCounter, parseAllDocuments, parseDocument, type YAMLError } from "yaml";
import { ProblemError } from "./problems.js";

/** 1-based line and column of a character offset. */
function lineCol(text: string, offset: number): { line: number; col: number } {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf("\n"); i >= 0 && i < offset; i = text.indexOf("\n", i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, col: offset - start + 1 };
}

// V8's JSON.parse messages, reduced to reasons that carry no input (some V8 messages quote it).
const JSON_REASONS: [RegExp, string][] = [
  [/^Unexpected end of JSON input/, "unexpected end of input"],
  [/^Unterminated string/, "unterminated string"],
  [/^Bad control character/, "control character in a string"],
  [/^Bad (escaped character|Unicode escape)/, "bad escape in a string"],
  [/^Unexpected non-whitespace character after JSON/, "text after the JSON value"],
  [/^(Unexpected token|Expected|Unexpected)/, "unexpected token"],
];

export function parseJsonBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    const msg = (e as Error)?.message ?? "";
    const reason = JSON_REASONS.find(([re]) => re.test(msg))?.[1] ?? "syntax error";
    const pos = /at position (\d+)/.exec(msg);
    const where = pos ? lineCol(text, Number(pos[1])) : undefined;
    throw new ProblemError("bad-json", `the body is not valid JSON: ${reason}${where ? ` at line ${where.line}, column ${where.col}` : ""}`);
  }
}

const describe = (e: YAMLError, lc: LineCounter) => {
  const { line, col } = lc.linePos(e.pos[0]);
  return `${e.code.toLowerCase().replaceAll("_", " ")} at line ${line}, column ${col}`;
};

export function parseYamlBody(text: string): unknown {
  const lc = new LineCounter();
  // prettyErrors off: the pretty form appends the source line. logLevel "error": nothing goes to stderr.
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, logLevel: "error", uniqueKeys: true });
  const first = doc.errors[0] ?? doc.warnings[0];
  if (first) throw new ProblemError("bad-yaml", `the body is not valid YAML: ${describe(first, lc)}${doc.errors.length ? "" : " (a warning: podsync refuses rather than guess)"}`);
  try {
    return doc.toJS({ maxAliasCount: 100 });
  } catch {
    throw new ProblemError("bad-yaml", "the body is not valid YAML: its aliases cannot be resolved within the limits (at most 100)");
  }
}

/** A YAML stream of documents (`---` between them), each to a value; empty documents are null (the caller
 * decides). The same refusals as parseYamlBody, with the line and column in the whole stream. */
export function parseYamlStream(text: string): unknown[] {
  const lc = new LineCounter();
  const parsed = parseAllDocuments(text, { lineCounter: lc, prettyErrors: false, logLevel: "error", uniqueKeys: true });
  // An empty stream (only comments or nothing) is an empty array carrying the stream's own errors.
  const streamErrors = "empty" in parsed ? parsed.errors : [];
  if (streamErrors[0]) throw new ProblemError("bad-yaml", `the body is not valid YAML: ${describe(streamErrors[0], lc)}`);
  const docs = [...parsed];
  for (const doc of docs) {
    const first = doc.errors[0] ?? doc.warnings[0];
    if (first) throw new ProblemError("bad-yaml", `the body is not valid YAML: ${describe(first, lc)}${doc.errors.length ? "" : " (a warning: podsync refuses rather than guess)"}`);
  }
  return docs.map((doc) => {
    try {
      return doc.toJS({ maxAliasCount: 100 });
    } catch {
      throw new ProblemError("bad-yaml", "the body is not valid YAML: its aliases cannot be resolved within the limits (at most 100)");
    }
  });
}
