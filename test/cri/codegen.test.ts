// The generated codec in src/gen is exactly what `npm run generate` makes from proto/ today.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";

function files(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name), base) : [join(dir, e.name).slice(base.length + 1)],
  );
}

it("src/gen is current with proto/ (run `npm run generate` if this fails)", () => {
  const out = mkdtempSync(join(tmpdir(), "podsync-gen-"));
  try {
    execFileSync("npx", ["buf", "generate", "--output", out], { stdio: "pipe" });
    const fresh = join(out, "src/gen");
    expect(files(fresh).sort()).toEqual(files("src/gen").sort());
    for (const f of files(fresh))
      expect(readFileSync(join(fresh, f), "utf8"), f).toBe(readFileSync(join("src/gen", f), "utf8"));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
