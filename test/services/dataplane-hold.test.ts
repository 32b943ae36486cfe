// One Services data plane per machine (src/services/dataplane-hold.ts): a second node gets none and says whose it
// is; the hold goes with its holder, also when the holder is killed; a node without it writes and binds nothing.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { holdDataplane, type DataplaneHold } from "../../src/services/dataplane-hold.js";
import { startServiceDataplane } from "../../src/services/dataplane.js";
import { servicesRefusalFor } from "../../src/services/node-dataplane.js";
import type { NftRunner } from "../../src/services/proxy/nft.js";
import { memoryServiceSource } from "../../src/services/types.js";

/** A table name of this test's own, so a node running on the machine keeps its hold. */
const table = () => `test-${randomUUID()}`;
const held: DataplaneHold[] = [];
const take = async (t: string, node: string) => {
  const h = await holdDataplane(t, node);
  held.push(h);
  return h;
};
afterEach(async () => {
  for (const h of held.splice(0)) if (h.held) await h.release();
});

describe("the machine's data plane hold", () => {
  it("is one node's: a second is refused with the holder's node and pid, and gets it once released", async () => {
    const t = table();
    const first = await take(t, "node-a");
    expect(first.held).toBe(true);
    const second = await take(t, "node-b");
    expect(second).toEqual({ held: false, reason: expect.stringContaining(`node "node-a", pid ${process.pid}`) });
    assert(!second.held);
    expect(second.reason).toContain(`the nftables table inet ${t}`);
    expect(second.reason).toContain("set PODSYNC_SERVICE_DATAPLANE=off on this one");
    // Another table is another data plane.
    expect((await take(table(), "node-b")).held).toBe(true);
    if (first.held) await first.release();
    expect((await take(t, "node-b")).held).toBe(true);
  });

  it("goes with a holder that is killed (SIGKILL): nothing stale is left", async () => {
    const t = table();
    const mod = new URL("../../src/services/dataplane-hold.ts", import.meta.url).pathname;
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "-e",
        `import(${JSON.stringify(mod)}).then((m) => m.holdDataplane(${JSON.stringify(t)}, "child")).then((h) => { console.log(h.held); setInterval(() => {}, 1000); })`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const exited = new Promise((r) => child.once("exit", r));
    try {
      const out = await new Promise<string>((resolve) => child.stdout.once("data", (d: Buffer) => resolve(String(d))));
      expect(out.trim()).toBe("true");
      const refused = await take(t, "parent");
      expect(refused).toEqual({ held: false, reason: expect.stringContaining(`node "child", pid ${child.pid}`) });
    } finally {
      child.kill("SIGKILL");
      await exited;
    }
    expect((await take(t, "parent")).held).toBe(true);
  });

  it("a data plane without it writes no rule and binds no DNS; Services are refused with its reason", async () => {
    const nftCalls: string[] = [];
    const nft: NftRunner = {
      probe: async () => (nftCalls.push("probe"), { ok: true, version: "nftables v1.0.6", tables: [] }),
      apply: async () => void nftCalls.push("apply"),
      list: async () => (nftCalls.push("list"), undefined),
      deleteTable: async () => (nftCalls.push("deleteTable"), false),
    };
    const logs: Record<string, unknown>[] = [];
    const reason = 'another podsync node on this machine runs the Services data plane: node "a", pid 1';
    const dp = await startServiceDataplane({
      source: memoryServiceSource({}),
      settings: {
        serviceCIDRs: ["10.96.0.0/16"],
        clusterDomain: "cluster.local",
        nft,
        dns: { address: "127.0.0.1", port: 0, upstreams: [] },
      },
      log: (r) => logs.push(r),
      hold: async () => ({ held: false, reason }),
    });
    expect(nftCalls).toEqual([]);
    expect(dp.dns).toBeUndefined();
    expect(dp.proxier).toBeUndefined();
    expect(dp.health()).toMatchObject({ available: false, proxy: { available: false, reason } });
    expect(logs).toContainEqual({ proxier: "unavailable", error: reason });
    expect(servicesRefusalFor("auto", dp)).toContain(`unavailable: ${reason}`);
    await dp.stop();
  });

  it("is given back when the start fails after taking it (a wildcard cluster DNS address), and at stop", async () => {
    const releases: string[] = [];
    const hold = async () => ({ held: true as const, release: async () => void releases.push("released") });
    const settings = { serviceCIDRs: ["10.96.0.0/16"], clusterDomain: "cluster.local", proxy: false };
    const bad = { ...settings, dns: { address: "0.0.0.0", port: 0, upstreams: [] } };
    await expect(startServiceDataplane({ source: memoryServiceSource({}), settings: bad, hold })).rejects.toThrow(
      /PODSYNC_CLUSTER_DNS: 0\.0\.0\.0 is not one node-local address/,
    );
    expect(releases).toEqual(["released"]);
    const dp = await startServiceDataplane({ source: memoryServiceSource({}), settings, hold });
    expect(releases).toEqual(["released"]);
    await dp.stop();
    expect(releases).toEqual(["released", "released"]);
  });
});
