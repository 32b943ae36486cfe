// What ships is what runs (issue 36/42): npm start, the podsync command (bin/podsync.mjs's shebang, so `podsync
// serve`) and `npm run cli` start node with the same flags, written once in npm start's script.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { missingNodeFlags, nodeFlagsOf as flagsOf, shippedNodeFlags } from "../../src/cli/server-flags.js";

describe("the server's node flags", () => {
  const shipped = shippedNodeFlags("package.json");
  const scripts = (JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> }).scripts;

  it("are only documented deployment knobs: a semi-space size, nothing else", () => {
    expect(shipped).toEqual([expect.stringMatching(/^--max-semi-space-size=\d+$/)]);
  });

  it("are the same for npm start, the podsync command's shebang and npm run cli", () => {
    const shebang = readFileSync("bin/podsync.mjs", "utf8").split("\n")[0]!;
    expect(shebang.startsWith("#!/usr/bin/env -S node")).toBe(true);
    expect(flagsOf(shebang)).toEqual(shipped);
    expect(flagsOf(scripts["cli"]!)).toEqual(shipped);
  });

  it("missing ones are named; argv and NODE_OPTIONS (either spelling) both count", () => {
    expect(missingNodeFlags(["--max-semi-space-size=4"], [])).toEqual(["--max-semi-space-size=4"]);
    expect(missingNodeFlags(["--max-semi-space-size=4"], ["--max-semi-space-size=4"])).toEqual([]);
    expect(missingNodeFlags(["--max-semi-space-size=4"], [], "--max_semi_space_size=4")).toEqual([]);
    expect(missingNodeFlags(["--max-semi-space-size=4"], ["--max-semi-space-size=8"])).toEqual([
      "--max-semi-space-size=4",
    ]);
  });
});
