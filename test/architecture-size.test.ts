// The size rules of docs/architecture.md, checked on the code with the TypeScript compiler's own parser: no function
// in src/ (outside the generated src/gen/) has a body over MAX_LINES lines, but those listed with the issue that
// splits them (other work changing them now, or listed debt); and every folder of src/ has a main file that opens with its two-line header.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { API } from "typescript/unstable/sync";
import * as is from "typescript/unstable/ast/is";
import type { Node, SourceFile } from "typescript/unstable/ast";
import { afterAll, describe, expect, it } from "vitest";

const SRC = resolve("src");
const MAX_LINES = 120;

/** Functions other work is changing now, each with its owner (issue #36's items). A path prefix allows every
 * function under it; `file#name` allows one function. A listed entry that is no longer long comes off the list. */
const LONG_ALLOWED: Record<string, string> = {};

/** Functions over the rule today that nobody above is changing, each to be split by the issue named (a split one
 * comes off the list; nothing may be added). Owners' areas are noted where another piece of work is in them. */
const LONG_DEBT: Record<string, string> = {};

interface Long {
  where: string;
  name: string;
  lines: number;
}

function longFunctions(): Long[] {
  const api = new API({ cwd: process.cwd() });
  afterAll(() => api.close());
  const project = api.updateSnapshot({ openProjects: [resolve("tsconfig.json")] }).getProjects()[0];
  if (!project) throw new Error("tsconfig.json: no project");
  const out: Long[] = [];
  for (const file of project.program.getSourceFileNames()) {
    const rel = relative(process.cwd(), file);
    if (!rel.startsWith("src/") || rel.startsWith("src/gen/")) continue;
    const sf = project.program.getSourceFile(file);
    if (sf) visit(sf, sf, rel, out);
  }
  return out;
}

function visit(sf: SourceFile, n: Node, rel: string, out: Long[]): void {
  const fn =
    is.isFunctionDeclaration(n) ||
    is.isFunctionExpression(n) ||
    is.isArrowFunction(n) ||
    is.isMethodDeclaration(n) ||
    is.isConstructorDeclaration(n) ||
    is.isGetAccessorDeclaration(n) ||
    is.isSetAccessorDeclaration(n);
  const body = fn ? (n as unknown as { body?: Node }).body : undefined;
  if (body) {
    const first = sf.getLineAndCharacterOfPosition(body.getStart(sf)).line;
    const last = sf.getLineAndCharacterOfPosition(body.getEnd()).line;
    if (last - first + 1 > MAX_LINES)
      out.push({ where: `${rel}:${first + 1}`, name: nameOf(n), lines: last - first + 1 });
  }
  n.forEachChild((c) => visit(sf, c, rel, out));
}

/** The function's name, or the name it is bound to (a variable, a property); "<anonymous>" otherwise. */
function nameOf(n: Node): string {
  const named = (x: Node | undefined) => {
    const id = (x as { name?: { text?: string } } | undefined)?.name;
    return typeof id?.text === "string" ? id.text : undefined;
  };
  return named(n) ?? named(n.parent) ?? "<anonymous>";
}

const allowed = (l: Long) =>
  [...Object.keys(LONG_ALLOWED), ...Object.keys(LONG_DEBT)].find((k) =>
    k.includes("#") ? k === `${l.where.split(":")[0]}#${l.name}` : l.where.startsWith(k),
  );

function folders(dir: string): string[] {
  return readdirSync(dir).flatMap((e) => {
    const p = join(dir, e);
    return statSync(p).isDirectory() ? [p, ...folders(p)] : [];
  });
}

describe("the size rules (docs/architecture.md)", () => {
  const long = longFunctions();

  it(`no function in src/ has a body over ${MAX_LINES} lines, but those listed`, () => {
    const bad = long.filter((l) => !allowed(l)).map((l) => `${l.where} ${l.name}: ${l.lines} lines`);
    expect(bad).toEqual([]);
  });

  it("each listed function or folder still holds a long one (a split one comes off the list)", () => {
    const used = new Set(long.map(allowed));
    expect([...Object.keys(LONG_ALLOWED), ...Object.keys(LONG_DEBT)].filter((k) => !used.has(k))).toEqual([]);
  });

  it("every folder of src/ has a main file opening with its two-line header", () => {
    const missing = folders(SRC)
      .filter((d) => !relative(SRC, d).startsWith("gen"))
      .filter((d) => {
        // The main file is in the folder, or is the same-named file beside it (src/node.ts for src/node/).
        const candidates = [
          ...readdirSync(d)
            .filter((f) => f.endsWith(".ts"))
            .map((f) => join(d, f)),
          `${d}.ts`,
        ];
        return !candidates.some((f) => {
          try {
            const [a, b] = readFileSync(f, "utf8").split("\n");
            return /^\/\/ Package \S+/.test(a ?? "") && (b ?? "").startsWith("// ");
          } catch {
            return false;
          }
        });
      })
      .map((d) => relative(SRC, d));
    expect(missing).toEqual([]);
  });
});
