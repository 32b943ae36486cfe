// JSON bodies → values, with errors that never echo the body. A pod body can hold pull-secret passwords, and
// V8's JSON.parse messages sometimes quote the offending input, which would carry them into the problem detail
// and the request log. So a refusal says only where (line and column) and a generic reason. YAML bodies:
// parse-yaml.ts, loaded at the first YAML body.
import { ProblemError } from "../usecases/problems.js";

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
    throw new ProblemError(
      "bad-json",
      `the body is not valid JSON: ${reason}${where ? ` at line ${where.line}, column ${where.col}` : ""}`,
    );
  }
}
