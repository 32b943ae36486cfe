// The nft CLI, the proxier's one way to the kernel: a transaction is one `nft -f -` run (all or nothing), and the
// table's contents are read with `nft -j list table`. podsync only ever names its own table here.
import { spawn } from "node:child_process";
import type { KernelTable } from "./transaction.js";

export interface NftRunner {
  /** Runs one transaction; rejects with nft's error text. */
  apply(script: readonly string[]): Promise<void>;
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

export function nftCli(bin = "nft"): NftRunner {
  return {
    async apply(script) {
      const r = await run(bin, ["-f", "-"], `${script.join("\n")}\n`);
      if (r.code !== 0) throw new NftError(`nft -f failed: ${firstLines(r.stderr)}`);
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
      // starts with nft's metainfo (the version), so one short-lived process answers all three questions.
      const l = await run(bin, ["-j", "list", "tables", "inet"]);
      if (l.error?.code === "ENOENT")
        return { ok: false, reason: `${bin} is not installed (Debian: apt-get install nftables)` };
      if (l.code !== 0) return { ok: false, reason: `${bin} cannot read the kernel's tables: ${firstLines(l.stderr)}` };
      let j: { nftables?: { metainfo?: { version?: string; release_name?: string }; table?: { name?: string } }[] };
      try {
        j = JSON.parse(l.stdout) as typeof j;
      } catch {
        return { ok: false, reason: `${bin} -j list tables: not JSON (${firstLines(l.stdout)})` };
      }
      const meta = j.nftables?.find((o) => o.metainfo)?.metainfo;
      const tables = (j.nftables ?? []).flatMap((o) => (o.table?.name ? [o.table.name] : []));
      const version = `nftables v${meta?.version ?? "?"}${meta?.release_name ? ` (${meta.release_name})` : ""}`;
      return { ok: true, version, tables };
    },
  };
}

const firstLines = (s: string) => s.trim().split("\n").slice(0, 6).join(" | ");
