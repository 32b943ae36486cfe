// The nft CLI, the proxier's one way to the kernel: a transaction is one `nft -f -` run (all or nothing), and the
// table's contents are read with `nft -j list table`. podsync only ever names its own table here.
import { spawn } from "node:child_process";
import { nftSession } from "./nft-session.js";
import type { KernelTable } from "./transaction.js";

export interface NftRunner {
  /** Runs one transaction; rejects with nft's error text. */
  apply(script: readonly string[]): Promise<void>;
  /** Ends what the runner keeps (nftCli's `nft -i` process). */
  close?(): void;
  /** nft processes started and transactions (and the probe's listing) run through them. */
  stats?(): { processes: number; transactions: number };
  /** The names of the chains and sets (maps too) the table holds; undefined when it does not exist. */
  list(table: string): Promise<KernelTable | undefined>;
  /** Deletes the table (and everything in it); false when it did not exist. */
  deleteTable(table: string): Promise<boolean>;
  /** nft's version and the inet tables the kernel holds (one `nft -j list tables inet`: the rights a transaction
   * needs, and whether the table exists, so a start on an empty kernel needs no listing), or why nft cannot be used. */
  probe(): Promise<{ ok: true; version: string; tables?: string[] } | { ok: false; reason: string }>;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  error?: NodeJS.ErrnoException;
}

function run(bin: string, args: string[], input?: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(bin, args, { stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.on("error", (e: NodeJS.ErrnoException) => resolve({ code: null, stdout: "", stderr: e.message, error: e }));
    child.on("close", (code) =>
      resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }),
    );
    child.stdin.on("error", () => undefined);
    child.stdin.end(input ?? "");
  });
}

export class NftError extends Error {}

const notFound = (r: Run) => /No such file or directory|does not exist/i.test(r.stderr);

/** The nft CLI: the probe and every transaction through one long-lived `nft -j -i` (nft-session.ts); the terse
 * listing a full sync of an existing table reads, and the table's deletion, as short-lived runs. */
export function nftCli(bin = "nft"): NftRunner {
  const session = nftSession(bin);
  return {
    async apply(script) {
      const { error } = await session.run(script);
      if (error) throw new NftError(`nft -f failed: ${firstLines(error)}`);
    },
    close: () => session.close(),
    stats: () => {
      const s = session.stats();
      return { processes: s.processes, transactions: s.lines };
    },
    async list(table) {
      // -t (terse): the names are wanted, not the maps' elements.
      const r = await run(bin, ["-j", "-t", "list", "table", "inet", table]);
      if (r.code !== 0) {
        if (notFound(r)) return undefined;
        throw new NftError(`nft list table inet ${table} failed: ${firstLines(r.stderr)}`);
      }
      const j = JSON.parse(r.stdout) as { nftables?: Record<string, { name?: string }>[] };
      const out: KernelTable = { chains: [], sets: [] };
      for (const o of j.nftables ?? []) {
        if (o["chain"]?.name) out.chains.push(o["chain"].name);
        else if (o["set"]?.name) out.sets.push(o["set"].name);
        else if (o["map"]?.name) out.sets.push(o["map"].name);
      }
      return out;
    },
    async deleteTable(table) {
      const r = await run(bin, ["delete", "table", "inet", table]);
      if (r.code === 0) return true;
      if (notFound(r)) return false;
      throw new NftError(`nft delete table inet ${table} failed: ${firstLines(r.stderr)}`);
    },
    async probe() {
      // A listing needs CAP_NET_ADMIN and nf_tables in the kernel: the same rights a transaction needs. Its JSON
      // starts with nft's metainfo (the version); it goes through the session, so the process the transactions
      // use is the only one started.
      let l: { error: string; output: string };
      try {
        l = await session.run(["list tables inet"], true);
      } catch (e) {
        session.close();
        if ((e as NodeJS.ErrnoException).code === "ENOENT")
          return { ok: false, reason: `${bin} is not installed (Debian: apt-get install nftables)` };
        return { ok: false, reason: `${bin} cannot be run: ${(e as Error).message}` };
      }
      if (l.error) {
        session.close();
        return { ok: false, reason: `${bin} cannot read the kernel's tables: ${firstLines(l.error)}` };
      }
      let j: { nftables?: { metainfo?: { version?: string; release_name?: string }; table?: { name?: string } }[] };
      try {
        j = JSON.parse(l.output) as typeof j;
      } catch {
        return { ok: false, reason: `${bin} -j list tables: not JSON (${firstLines(l.output)})` };
      }
      const meta = j.nftables?.find((o) => o.metainfo)?.metainfo;
      const tables = (j.nftables ?? []).flatMap((o) => (o.table?.name ? [o.table.name] : []));
      const version = `nftables v${meta?.version ?? "?"}${meta?.release_name ? ` (${meta.release_name})` : ""}`;
      return { ok: true, version, tables };
    },
  };
}

const firstLines = (s: string) => s.trim().split("\n").slice(0, 6).join(" | ");
