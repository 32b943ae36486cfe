// The CLI's pure parts: kubectl's -o jsonpath templates, -l selectors, flag parsing in podsync's words, the
// key lookup order, the progress line, the per-pod progress block and an error answer's lines.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { commandName, parseCommandArgs } from "../../src/cli/args.js";
import { configDir, findKey } from "../../src/cli/keys.js";
import { jsonPath } from "../../src/cli/print/jsonpath.js";
import { parseSelector } from "../../src/cli/selector.js";
import { parseDuration, progress } from "../../src/cli/progress.js";
import { podProgress } from "../../src/cli/print/pod-progress.js";
import { problemLines } from "../../src/cli/output.js";

const list = {
  kind: "List",
  items: [
    { metadata: { name: "a", labels: { app: "x" } }, status: { phase: "Running" } },
    { metadata: { name: "b" }, status: { phase: "Pending" } },
  ],
};

describe("-o jsonpath", () => {
  it("fields, wildcards, indexes, range and quoted text, as kubectl prints them", () => {
    expect(jsonPath("{.items[*].metadata.name}", list)).toBe("a b");
    expect(jsonPath("{.items[0].status.phase}", list)).toBe("Running");
    expect(jsonPath("{.items[-1].metadata.name}", list)).toBe("b");
    expect(jsonPath(`{range .items[*]}{.metadata.name}{"\\t"}{.status.phase}{"\\n"}{end}`, list)).toBe(
      "a\tRunning\nb\tPending\n",
    );
    expect(jsonPath("name={.items[0].metadata['labels'].app}", list)).toBe("name=x");
    expect(jsonPath("{.items[0].metadata.labels}", list)).toBe('{"app":"x"}');
    expect(jsonPath("{.items[1].metadata.labels.app}", list)).toBe("");
    expect(() => jsonPath("{.items[?(@.x)]}", list)).toThrow("filters");
    expect(() => jsonPath("{range .items[*]}{.a}", list)).toThrow("{range} without {end}");
  });
});

describe("-l selectors", () => {
  it("equality, set and existence requirements, all of which must hold (k8s.io/apimachinery labels.Parse)", () => {
    const m = (sel: string, labels?: Record<string, string>) => parseSelector(sel)(labels);
    expect(m("app=web", { app: "web" })).toBe(true);
    expect(m("app==web,tier=db", { app: "web" })).toBe(false);
    expect(m("app!=web", {})).toBe(true); // as upstream: a missing label is "not web"
    expect(m("tier in (a, b)", { tier: "b" })).toBe(true);
    expect(m("tier notin (a,b)", { tier: "b" })).toBe(false);
    expect(m("app", { app: "" })).toBe(true);
    expect(m("!app", { app: "" })).toBe(false);
    expect(m("app.kubernetes.io/name=web", { "app.kubernetes.io/name": "web" })).toBe(true);
    expect(() => parseSelector("app=(")).toThrow('cannot parse "app=("');
  });
});

describe("flags", () => {
  it("finds the command past global flags and their values; rewords parseArgs's errors; takes kubectl's --flag=false", () => {
    expect(commandName(["--url", "http://x", "-n", "prod", "get", "web"])).toEqual({
      name: "get",
      rest: ["--url", "http://x", "-n", "prod", "web"],
    });
    const opts = { wait: { type: "boolean" as const }, output: { type: "string" as const, short: "o" } };
    expect(parseCommandArgs(["web", "--wait=false", "-o", "wide"], opts, "x").o).toMatchObject({
      wait: false,
      output: "wide",
    });
    expect(() => parseCommandArgs(["-z"], opts, "x")).toThrow("unknown flag -z");
    expect(() => parseCommandArgs(["-o"], opts, "x")).toThrow("flag --output needs a value");
    expect(() => parseCommandArgs(["--help=1"], opts, "x")).toThrow(`flag --help is true or false, not "1"`);
    expect(() => parseCommandArgs(["--wait=maybe"], opts, "x")).toThrow('flag --wait is true or false, not "maybe"');
    // after --, nothing is a flag
    expect(parseCommandArgs(["web", "--", "ls", "-l", "--wait=false"], opts, "x").positionals).toEqual([
      "web",
      "ls",
      "-l",
      "--wait=false",
    ]);
  });

  it("durations", () => {
    expect([
      parseDuration("30s"),
      parseDuration("5m"),
      parseDuration("2"),
      parseDuration("500ms"),
      parseDuration("x"),
    ]).toEqual([30_000, 300_000, 2000, 500, undefined]);
  });
});

describe("the key", () => {
  it("is looked for in --key, $PODSYNC_KEY, the config dir, then the dev key", () => {
    const d = mkdtempSync(join(tmpdir(), "podsync-keys-"));
    const key = JSON.stringify({ kty: "OKP", crv: "Ed25519", x: "x", d: "d", alg: "EdDSA", kid: "k" });
    const env = { HOME: d, XDG_CONFIG_HOME: join(d, "cfg"), PODSYNC_DEV_DIR: join(d, "dev") };
    expect(configDir(env)).toBe(join(d, "cfg", "podsync"));
    expect(configDir({ HOME: d })).toBe(join(d, ".config", "podsync"));
    expect(() => findKey(undefined, env)).toThrow(
      /no signing key found; looked at:[\s\S]*cfg\/podsync\/key\.json[\s\S]*dev\/dev-key\.json/,
    );
    mkdirSync(join(d, "dev"));
    writeFileSync(join(d, "dev", "dev-key.json"), key);
    expect(findKey(undefined, env)).toMatchObject({ source: "the dev key" });
    mkdirSync(join(d, "cfg", "podsync"), { recursive: true });
    writeFileSync(join(d, "cfg", "podsync", "key.json"), key);
    expect(findKey(undefined, env)).toMatchObject({ source: "the config dir" });
    expect(findKey(undefined, { ...env, PODSYNC_KEY: join(d, "dev", "dev-key.json") })).toMatchObject({
      source: "$PODSYNC_KEY",
    });
    expect(() => findKey(join(d, "nope.json"), env)).toThrow(
      `cannot read the signing key ${join(d, "nope.json")} (from --key): no such file`,
    );
    writeFileSync(join(d, "pub.json"), JSON.stringify({ kty: "OKP", x: "x" }));
    expect(() => findKey(join(d, "pub.json"), env)).toThrow('is not a private JWK with "alg"');
  });
});

describe("progress", () => {
  it("off a terminal, prints each new message once (a changing count of seconds is not new); -q prints nothing", () => {
    let out = "";
    const stream = { isTTY: false, write: (s: string) => ((out += s), true) } as unknown as NodeJS.WriteStream;
    const p = progress({ quiet: false }, stream);
    p.update("waiting: 1s");
    p.update("waiting: 2s");
    p.update("pulling: 3s");
    p.done();
    expect(out).toBe("waiting: 1s\npulling: 3s\n");
    out = "";
    const q = progress({ quiet: true }, stream);
    q.update("x");
    expect(out).toBe("");
  });
});

describe("per-pod progress (apply, sync)", () => {
  const sink = (isTTY: boolean) => {
    const s = { out: "", isTTY, columns: 40, rows: 5, write: (t: string) => ((s.out += t), true) };
    return s;
  };
  it("without a terminal: the heading once (not again for its seconds), each pod's new state once, as lines", () => {
    const s = sink(false);
    const p = podProgress({ quiet: false }, s as unknown as NodeJS.WriteStream);
    p.heading("applying generation 2 (0s)");
    p.heading("applying generation 2 (1s)");
    p.set("pod/a", 'Pulling image "x"');
    p.set("pod/b", "Started container main");
    p.set("pod/a", 'Pulling image "x"');
    p.set("pod/a", "Started container main");
    p.done();
    expect(s.out).toBe(
      'applying generation 2 (0s)\npod/a: Pulling image "x"\npod/b: Started container main\npod/a: Started container main\n',
    );
  });
  it("on a terminal: one line per pod, the block rewritten in place, cut to the width and height, cleared at the end", () => {
    const s = sink(true);
    const p = podProgress({ quiet: false }, s as unknown as NodeJS.WriteStream);
    p.heading("syncing (0s)");
    expect(s.out).toBe("\r\x1b[Jsyncing (0s)\n");
    s.out = "";
    p.set("pod/a", "Created container: main");
    expect(s.out).toBe("\x1b[1F\x1b[Jsyncing (0s)\npod/a: Created container: main\n");
    s.out = "";
    p.set("pod/a", `Started container ${"x".repeat(60)}`);
    expect(s.out.split("\n")[1]).toHaveLength(39);
    for (const n of ["b", "c", "d", "e"]) p.set(`pod/${n}`, "Started");
    s.out = "";
    p.set("pod/f", "Started");
    // 5 rows: the heading, the newest two pods and a count (the cursor cannot go above the screen).
    expect(s.out).toBe("\x1b[4F\x1b[Jsyncing (0s)\npod/e: Started\npod/f: Started\n… and 4 more\n");
    s.out = "";
    p.done();
    expect(s.out).toBe("\x1b[4F\x1b[J");
  });
  it("-q: nothing", () => {
    const s = sink(true);
    const p = podProgress({ quiet: true }, s as unknown as NodeJS.WriteStream);
    p.heading("x");
    p.set("pod/a", "y");
    p.done();
    expect(s.out).toBe("");
  });
});

describe("an error answer's lines", () => {
  const errors = [
    { path: "pods[0].kind", message: "Service default/a: the node's Services data plane is not running" },
    { path: "pods[1].kind", message: "Service default/b: the node's Services data plane is not running" },
  ];
  it("each field once; the detail only where it says more than the fields", () => {
    const why = "Services need the node's data plane, which is unavailable: another podsync node runs it";
    expect(problemLines(501, { title: "Not available on this deployment", detail: why, errors })).toEqual([
      `501 Not available on this deployment: ${why}`,
      `    pods[0].kind: ${errors[0]!.message}`,
      `    pods[1].kind: ${errors[1]!.message}`,
    ]);
    // A detail that is the fields on one line (for curl users) is not printed twice.
    const joined = errors.map((e) => `${e.path}: ${e.message}`).join("; ");
    expect(problemLines(422, { title: "Invalid", detail: joined, errors })[0]).toBe("422 Invalid:");
    expect(problemLines(409, { title: "Conflict", detail: "uid in use" })).toEqual(["409 Conflict: uid in use"]);
  });
});
