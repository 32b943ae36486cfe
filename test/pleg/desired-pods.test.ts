// The node's desired state on disk: one file per pod, atomic writes, a replace that a crash cannot leave
// half done, and a store that cannot be written refusing with the previous state intact.
import { constants, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync, existsSync } from "node:fs";
import * as nodeFs from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileDesiredState, type StateFs } from "../../src/state/desired-pods.js";
import {
  MemoryDesiredState,
  StaleGenerationError,
  type DesiredPod,
  type DesiredState,
} from "../../src/pleg/desired-state.js";
import { StateUnavailableError } from "../../src/pleg/state-unavailable.js";
import { pod } from "../support/pods.js";

const entry = (name: string, iat = 1000, extra: Partial<DesiredPod> = {}): DesiredPod => ({
  pod: pod({}, { name, uid: `uid-${name}` }),
  audit: { iss: "fleet", kid: "k1", jti: `j-${name}-${iat}`, iat },
  storedAt: 5,
  ...extra,
});
const dir = () => mkdtempSync(join(tmpdir(), "podsync-desired-"));
const uids = async (s: DesiredState) => (await s.list()).map((e) => e.pod.metadata.uid).sort();

/** The real fs, with writes (open for writing, rename, unlink) failing ENOSPC once `failing` is set. */
function flakyFs() {
  const state = { failing: false, failAfter: Infinity, writes: 0, failDirSync: false };
  const nospc = () => Object.assign(new Error("no space left on device"), { code: "ENOSPC" });
  const gate = () => {
    if (state.failing || ++state.writes > state.failAfter) throw nospc();
  };
  const fs: StateFs = {
    ...nodeFs,
    open: (async (path: string, flags?: string | number, mode?: number) => {
      if (
        flags === "w" ||
        flags === "a" ||
        (typeof flags === "number" && (flags & (constants.O_WRONLY | constants.O_RDWR)) !== 0)
      )
        gate();
      const fh = await nodeFs.open(path, flags, mode);
      // A directory opened to fsync it, whose fsync fails (after the rename or unlink it was to make durable).
      if (flags === "r" && state.failDirSync)
        return Object.assign(Object.create(fh), {
          sync: async () => Promise.reject(Object.assign(new Error("input/output error"), { code: "EIO" })),
          close: () => fh.close(),
        });
      return fh;
    }) as StateFs["open"],
    rename: async (a, b) => (gate(), nodeFs.rename(a, b)),
    unlink: async (p) => (gate(), nodeFs.unlink(p)),
  };
  return { fs, state };
}

describe.each([
  ["memory", () => new MemoryDesiredState()],
  ["files", () => new FileDesiredState(dir())],
])("the DesiredState contract (%s)", (_name, make: () => DesiredState) => {
  it("put, get, list, remove; a set replaces all at a higher generation", async () => {
    const s = make();
    expect(await s.generation()).toBe(0);
    await s.put(entry("a"));
    await s.put(entry("b"));
    expect(await uids(s)).toEqual(["uid-a", "uid-b"]);
    expect((await s.get("uid-a"))!.pod.spec).toEqual(entry("a").pod.spec);
    expect(await s.remove("uid-a")).toBe(true);
    expect(await s.remove("uid-a")).toBe(false);
    expect(await s.replace(3, [entry("c"), entry("d")])).toEqual({ removed: ["uid-b"] });
    expect(await s.generation()).toBe(3);
    expect(await uids(s)).toEqual(["uid-c", "uid-d"]);
  });

  it("refuses a generation not above the current one, and a pod older than the stored one, changing nothing", async () => {
    const s = make();
    await s.replace(5, [entry("a", 2000)]);
    for (const g of [5, 4]) await expect(s.replace(g, [])).rejects.toBeInstanceOf(StaleGenerationError);
    await expect(s.put(entry("a", 1999))).rejects.toThrow(/older/);
    expect(await s.generation()).toBe(5);
    expect((await s.get("uid-a"))!.audit.iat).toBe(2000);
    await s.put(entry("a", 2000)); // the same second is not older
    await s.put(entry("a", 2001));
    expect((await s.get("uid-a"))!.audit.iat).toBe(2001);
  });

  it("remove with an iat: refused inside the write when the stored entry is newer, even one queued just before it", async () => {
    const s = make();
    await s.put(entry("a", 1000));
    // A sync with a newer token is being written when an older DELETE arrives: the DELETE waits its turn and
    // then sees the newer entry (its check and its removal are one step).
    const [, removed] = await Promise.allSettled([s.put(entry("a", 3000)), s.remove("uid-a", { iat: 2000 })]);
    expect(removed.status).toBe("rejected");
    expect((removed as PromiseRejectedResult).reason).toBeInstanceOf(StaleGenerationError);
    expect((await s.get("uid-a"))!.audit.iat).toBe(3000);
    expect(await s.remove("uid-a", { iat: 3000 })).toBe(true);
    expect(await s.remove("uid-a", { iat: 1 })).toBe(false); // nothing stored: nothing to be older than
  });
});

describe("FileDesiredState", () => {
  it("one readable v1 Pod file per pod, dirs 0700, files 0600; a new instance on the same dir sees the same set", async () => {
    const d = dir();
    const s = new FileDesiredState(d);
    await s.replace(7, [entry("a"), entry("b", 1000, { objects: { configMaps: [{ metadata: { name: "cm" } }] } })]);
    await s.put(entry("c"));
    expect(readdirSync(join(d, "pods")).sort()).toEqual(["uid-a.json", "uid-b.json", "uid-c.json"]);
    const file = JSON.parse(readFileSync(join(d, "pods", "uid-a.json"), "utf8"));
    expect(file).toMatchObject({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "a", uid: "uid-a" },
      spec: { containers: [{ name: "main" }] },
      podsync: { audit: { iss: "fleet", kid: "k1", iat: 1000 }, storedAt: 5 },
    });
    expect(JSON.parse(readFileSync(join(d, "generation.json"), "utf8"))).toEqual({ generation: 7 });
    expect(statSync(join(d, "pods")).mode & 0o777).toBe(0o700);
    expect(statSync(d).mode & 0o777).toBe(0o700);
    for (const f of ["pods/uid-a.json", "generation.json"]) expect(statSync(join(d, f)).mode & 0o777).toBe(0o600);

    const again = new FileDesiredState(d);
    expect(await again.generation()).toBe(7);
    expect(await uids(again)).toEqual(["uid-a", "uid-b", "uid-c"]);
    // Read back exactly as stored (hashes of the spec, and so the containers, stay the same).
    for (const e of await s.list()) expect(await again.get(e.pod.metadata.uid)).toEqual(e);
  });

  it("a replace cut short before its commit leaves the old set; after it, open finishes it", async () => {
    const d = dir();
    const s = new FileDesiredState(d);
    await s.replace(1, [entry("a"), entry("b")]);
    // A crash after the new files were written, before generation.json named the new set.
    writeFileSync(
      join(d, "pods", "uid-c.json.next"),
      readFileSync(join(d, "pods", "uid-a.json"), "utf8").replaceAll("uid-a", "uid-c"),
    );
    writeFileSync(join(d, "pods", ".uid-d.json.next.tmp"), "{");
    const before = new FileDesiredState(d);
    expect(await before.generation()).toBe(1);
    expect(await uids(before)).toEqual(["uid-a", "uid-b"]);
    expect(readdirSync(join(d, "pods")).sort()).toEqual(["uid-a.json", "uid-b.json"]);

    // A crash after the commit: generation.json names the set, a .next is still waiting, a dropped file remains.
    writeFileSync(
      join(d, "pods", "uid-c.json.next"),
      readFileSync(join(d, "pods", "uid-a.json"), "utf8").replaceAll("uid-a", "uid-c"),
    );
    writeFileSync(join(d, "generation.json"), JSON.stringify({ generation: 2, keep: ["uid-a", "uid-c"] }));
    const after = new FileDesiredState(d);
    expect(await after.generation()).toBe(2);
    expect(await uids(after)).toEqual(["uid-a", "uid-c"]);
    expect(readdirSync(join(d, "pods")).sort()).toEqual(["uid-a.json", "uid-c.json"]);
    expect(JSON.parse(readFileSync(join(d, "generation.json"), "utf8"))).toEqual({ generation: 2 });
  });

  it("a disk that fails (full, read-only) is StateUnavailableError at every step, and the previous state stays", async () => {
    const d = dir();
    const { fs, state } = flakyFs();
    const s = new FileDesiredState(d, { fs });
    await s.replace(1, [entry("a"), entry("b")]);
    // The pod files (a failing disk may also leave a `.next` it could not remove: never acted on, open deletes it).
    const snapshot = () =>
      readdirSync(join(d, "pods"))
        .filter((f) => f.endsWith(".json"))
        .sort()
        .map((f) => [f, readFileSync(join(d, "pods", f), "utf8")]);
    const files = snapshot();
    // Fail at each write of a replace in turn: 3 pod files (temp + rename each), then the commit.
    for (let n = 0; n < 8; n++) {
      state.writes = 0;
      state.failAfter = n;
      await expect(s.replace(2, [entry("a", 1001), entry("c"), entry("d")])).rejects.toBeInstanceOf(
        StateUnavailableError,
      );
      state.failAfter = Infinity;
      expect(await s.generation()).toBe(1);
      expect(await uids(s)).toEqual(["uid-a", "uid-b"]);
      expect(snapshot()).toEqual(files);
      const fresh = new FileDesiredState(d);
      expect([await fresh.generation(), await uids(fresh)]).toEqual([1, ["uid-a", "uid-b"]]);
      expect(readdirSync(join(d, "pods")).sort()).toEqual(["uid-a.json", "uid-b.json"]);
    }
    state.failing = true;
    await expect(s.put(entry("c"))).rejects.toBeInstanceOf(StateUnavailableError);
    await expect(s.put(entry("a", 1002))).rejects.toBeInstanceOf(StateUnavailableError);
    await expect(s.remove("uid-a")).rejects.toBeInstanceOf(StateUnavailableError);
    expect(await uids(s)).toEqual(["uid-a", "uid-b"]);
    expect((await s.get("uid-a"))!.audit.iat).toBe(1000);
    expect(snapshot()).toEqual(files);
    state.failing = false;
    await s.put(entry("c"));
    expect(await uids(new FileDesiredState(d))).toEqual(["uid-a", "uid-b", "uid-c"]);
  });

  it("a directory fsync that fails after the commit's rename: 503, and the disk decides (the whole new set, never a mix)", async () => {
    const d = dir();
    const { fs, state } = flakyFs();
    const s = new FileDesiredState(d, { fs });
    await s.replace(1, [entry("a"), entry("b")]);
    state.failDirSync = true;
    // The pods' directory is synced before the commit: let that pass, fail only the state dir's after the rename.
    const realOpen = fs.open;
    fs.open = (async (path: string, flags?: string, mode?: number) =>
      flags === "r" && path === join(d, "pods")
        ? nodeFs.open(path, flags, mode)
        : realOpen(path, flags, mode)) as StateFs["open"];
    await expect(s.replace(2, [entry("a", 1001), entry("c")])).rejects.toBeInstanceOf(StateUnavailableError);
    state.failDirSync = false;
    fs.open = realOpen;
    // generation.json names the new set: this store and a fresh one both read the whole new set from the disk.
    for (const view of [s, new FileDesiredState(d)]) {
      expect([await view.generation(), await uids(view)]).toEqual([2, ["uid-a", "uid-c"]]);
      expect((await view.get("uid-a"))!.audit.iat).toBe(1001);
    }
  });

  it("a state dir that cannot exist (a path under a file) is StateUnavailableError, retried on the next call", async () => {
    const d = dir();
    writeFileSync(join(d, "file"), "");
    const s = new FileDesiredState(join(d, "file", "state"));
    await expect(s.list()).rejects.toBeInstanceOf(StateUnavailableError);
    await expect(s.put(entry("a"))).rejects.toMatchObject({ code: "ENOTDIR" });
    expect(existsSync(join(d, "file", "state"))).toBe(false);
  });

  it("a file that is not a valid pod is left out and reported, never acted on", async () => {
    const d = dir();
    const s = new FileDesiredState(d);
    await s.put(entry("a"));
    writeFileSync(
      join(d, "pods", "uid-x.json"),
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "x", uid: "uid-x" },
        spec: { containers: [] },
        podsync: { audit: { iss: "me", iat: 1 } },
      }),
    );
    writeFileSync(join(d, "pods", "uid-y.json"), "{");
    const skipped: string[] = [];
    const again = new FileDesiredState(d, { onSkip: (f, why) => skipped.push(`${f.split("/").pop()}: ${why}`) });
    expect(await uids(again)).toEqual(["uid-a"]);
    expect(skipped.sort()).toEqual([
      expect.stringMatching(/^uid-x.json: not a valid pod: spec.containers/),
      "uid-y.json: not valid JSON",
    ]);
  });
});

describe("FileDesiredState: a put that changes only the audit record (a converged sync)", () => {
  const podFile = (d: string, uid = "uid-a") => join(d, "pods", `${uid}.json`);
  const auditLog = (d: string) => join(d, "audit.log");
  /** Counts fsyncs and durable appends (a datasync, or a write to a file opened O_DSYNC) through the store's fs. */
  function countingFs() {
    const n = { sync: 0, durable: 0, renames: 0 };
    const fs: StateFs = {
      ...nodeFs,
      open: (async (path: string, flags?: string | number, mode?: number) => {
        const fh = await nodeFs.open(path, flags, mode);
        const dsync = typeof flags === "number" && (flags & constants.O_DSYNC) !== 0;
        return Object.assign(Object.create(fh), {
          sync: () => (n.sync++, fh.sync()),
          datasync: () => (n.durable++, fh.datasync()),
          close: () => fh.close(),
          appendFile: (data: string, enc: BufferEncoding) => fh.appendFile(data, enc),
          write: (...a: Parameters<typeof fh.write>) => (dsync && n.durable++, fh.write(...a)),
          writeFile: (data: string, enc: BufferEncoding) => fh.writeFile(data, enc),
        });
      }) as StateFs["open"],
      rename: async (a, b) => (n.renames++, nodeFs.rename(a, b)),
    };
    return { fs, n };
  }

  it("leaves the pod's file alone, appends one durable line, and the newer iat orders later requests, also after a restart", async () => {
    const d = dir();
    const { fs, n } = countingFs();
    const s = new FileDesiredState(d, { fs });
    await s.put(entry("a", 1000));
    const file = readFileSync(podFile(d), "utf8");
    const before = { ...n };
    await s.put({ ...entry("a", 2000), storedAt: 9 });
    // No rewrite (no temp file, no rename, no fsync of the file or the directory): one durable append to the log.
    expect([n.sync - before.sync, n.renames - before.renames, n.durable - before.durable]).toEqual([0, 0, 1]);
    expect(readFileSync(podFile(d), "utf8")).toBe(file);
    expect(readFileSync(auditLog(d), "utf8").trim().split("\n")).toHaveLength(1);
    // The spec was stored at 5; the audit is the newer token's.
    expect(await s.get("uid-a")).toMatchObject({ storedAt: 5, audit: { iat: 2000, jti: "j-a-2000" } });
    await expect(s.put(entry("a", 1500))).rejects.toBeInstanceOf(StaleGenerationError);
    await expect(s.remove("uid-a", { iat: 1500 })).rejects.toBeInstanceOf(StaleGenerationError);

    // A restart (kill -9 after the put returned): the line is folded into the file, the log emptied.
    const again = new FileDesiredState(d);
    expect(await again.get("uid-a")).toMatchObject({ storedAt: 5, audit: { iat: 2000 } });
    expect(readFileSync(auditLog(d), "utf8")).toBe("");
    expect(JSON.parse(readFileSync(podFile(d), "utf8")).podsync).toMatchObject({ storedAt: 5, audit: { iat: 2000 } });
    await expect(again.remove("uid-a", { iat: 1500 })).rejects.toBeInstanceOf(StaleGenerationError);
    // A changed spec is a rewrite as before.
    await again.put(
      entry("a", 3000, {
        pod: pod(
          { containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "2"] }] },
          { name: "a", uid: "uid-a" },
        ),
      }),
    );
    expect(readFileSync(podFile(d), "utf8")).not.toBe(file);
  });

  it("concurrent converged puts share one durable write", async () => {
    const d = dir();
    const { fs, n } = countingFs();
    const s = new FileDesiredState(d, { fs });
    await Promise.all(["a", "b", "c", "d"].map((x) => s.put(entry(x, 1000))));
    const before = n.durable;
    await Promise.all(["a", "b", "c", "d"].map((x, i) => s.put(entry(x, 2000 + i))));
    expect(n.durable - before).toBeLessThanOrEqual(2); // the first line alone, then the other three together
    const again = new FileDesiredState(d);
    expect((await again.list()).map((e) => e.audit.iat).sort()).toEqual([2000, 2001, 2002, 2003]);
  });

  it("crash points: a torn line is the old entry, a whole line the new one, a fold cut short folds again; a line for a file since rewritten is void", async () => {
    const d = dir();
    const s = new FileDesiredState(d);
    await s.put(entry("a", 1000));
    await s.put(entry("b", 1000));
    const line = (uid: string, of: number, iat: number) =>
      `${JSON.stringify({ uid, of, audit: { iss: "fleet", kid: "k1", jti: `j-${iat}`, iat } })}\n`;
    // Killed while appending: the last line is cut.
    writeFileSync(auditLog(d), line("uid-a", 5, 2000) + line("uid-b", 5, 2000).slice(0, 30));
    let view = new FileDesiredState(d);
    expect([(await view.get("uid-a"))!.audit.iat, (await view.get("uid-b"))!.audit.iat]).toEqual([2000, 1000]);
    // Killed while folding: the file already rewritten, the log still full. The same lines again: the same result.
    writeFileSync(auditLog(d), line("uid-a", 5, 2000));
    view = new FileDesiredState(d);
    expect((await view.get("uid-a"))!.audit.iat).toBe(2000);
    // A line older than the file's record, or for a file rewritten since (another storedAt), changes nothing.
    writeFileSync(auditLog(d), line("uid-a", 5, 1500) + line("uid-b", 4, 3000) + line("uid-gone", 5, 3000));
    view = new FileDesiredState(d);
    expect([(await view.get("uid-a"))!.audit.iat, (await view.get("uid-b"))!.audit.iat]).toEqual([2000, 1000]);
    expect(await uids(view)).toEqual(["uid-a", "uid-b"]);
  });

  it("a log that cannot be written: 503, the old audit stands (in memory and on disk)", async () => {
    const d = dir();
    const { fs, state } = flakyFs();
    const s = new FileDesiredState(d, { fs });
    await s.put(entry("a", 1000));
    state.failing = true;
    await expect(s.put(entry("a", 2000))).rejects.toBeInstanceOf(StateUnavailableError);
    state.failing = false;
    expect((await s.get("uid-a"))!.audit.iat).toBe(1000);
    expect((await new FileDesiredState(d).get("uid-a"))!.audit.iat).toBe(1000);
  });

  it("kill -9 of a process making converged puts, at a random moment: the store holds the old audit or a newer one, never a torn file", async () => {
    const d = dir();
    await new FileDesiredState(d).put(entry("a", 1000));
    const script = `
      import { FileDesiredState } from ${JSON.stringify(join(process.cwd(), "src/state/desired-pods.ts"))};
      const s = new FileDesiredState(${JSON.stringify(d)});
      const e = JSON.parse(process.argv.at(-1));
      for (let iat = 1001; ; iat++) { await s.put({ ...e, audit: { ...e.audit, iat, jti: "j" + iat }, storedAt: Date.now() }); if (iat === 1001) process.stdout.write("go\\n"); }`;
    const { spawn } = await import("node:child_process");
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script, JSON.stringify(entry("a", 1000))],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise<void>((res, rej) => {
      child.stdout.once("data", () => res());
      child.once("exit", (code) => rej(new Error(`the writer exited (${code}) before its first put`)));
    });
    await new Promise((r) => setTimeout(r, 50 + Math.random() * 200));
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    const after = new FileDesiredState(d);
    const a = await after.get("uid-a");
    expect(a!.audit.iat).toBeGreaterThan(1000);
    expect(a!.storedAt).toBe(5);
    expect(readdirSync(join(d, "pods"))).toEqual(["uid-a.json"]);
  });
});
