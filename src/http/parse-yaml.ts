// YAML bodies → values, with the same refusals as JSON's (parse-body.ts): a refusal says where (line and column)
// and a generic reason, never the input (yaml's pretty errors and warnings quote it, and a pod body can hold
// pull-secret passwords). A warning (an unknown tag, whose value would otherwise be dropped or changed) is a
// refusal too, never a line on stderr. Its own module, loaded at the first YAML body (signed-request.ts): the yaml
// parser is about 1 MiB of heap that a node fed JSON and compact tokens never needs.
import { LineCounter, parseAllDocuments, type YAMLError } from "yaml";
import { ProblemError } from "../usecases/problems.js";

const describe = (e: YAMLError, lc: LineCounter) => {
  const { line, col } = lc.linePos(e.pos[0]);
  return `${e.code.toLowerCase().replaceAll("_", " ")} at line ${line}, column ${col}`;
};

/** A YAML stream of documents (`---` between them), each to a value; empty documents are null (the caller
 * decides). A refusal names the line and column in the whole stream. */
export function parseYamlStream(text: string): unknown[] {
  const lc = new LineCounter();
  const parsed = parseAllDocuments(text, { lineCounter: lc, prettyErrors: false, logLevel: "error", uniqueKeys: true });
  // An empty stream (only comments or nothing) is an empty array carrying the stream's own errors.
  const streamErrors = "empty" in parsed ? parsed.errors : [];
  if (streamErrors[0])
    throw new ProblemError("bad-yaml", `the body is not valid YAML: ${describe(streamErrors[0], lc)}`);
  const docs = [...parsed];
  for (const doc of docs) {
    const first = doc.errors[0] ?? doc.warnings[0];
    if (first)
      throw new ProblemError(
        "bad-yaml",
        `the body is not valid YAML: ${describe(first, lc)}${doc.errors.length ? "" : " (a warning: podsync refuses rather than guess)"}`,
      );
  }
  return docs.map((doc) => {
    try {
      return doc.toJS({ maxAliasCount: 100 });
    } catch {
      throw new ProblemError(
        "bad-yaml",
        "the body is not valid YAML: its aliases cannot be resolved within the limits (at most 100)",
      );
    }
  });
}
