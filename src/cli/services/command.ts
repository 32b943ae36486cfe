// Package cli/services/ — `podsync services` (flush the nftables table the node's data plane made).
// Imports the CLI's helpers (../) and, when run, services/proxy/'s flush; never the node's agent.
//
// podsync services flush: removes everything podsync's Service data plane made in the kernel (the nftables table
// `inet podsync`), as `kube-proxy --cleanup` does for kube-proxy's. Run on the node, as root; no server call.
import { fail, usage } from "../args.js";
import type { Command } from "../command.js";

const services: Command = {
  usage: ["services flush"],
  help: `flush: delete the nftables table "inet podsync" (ClusterIP and NodePort rules, affinity sets) and nothing
else. Service traffic stops at once; a running podsync with Services on programs the table again at its next
change or start. Needs root (CAP_NET_ADMIN) and the nft command.`,
  examples: ["sudo podsync services flush"],
  options: {},
  async run(ctx) {
    const [sub] = ctx.args;
    if (sub !== "flush") usage(`unknown services command "${sub ?? ""}": use podsync services flush`, ctx.command);
    const { flushServiceTable } = await import("../../services/proxy/flush.js");
    const r = await flushServiceTable();
    if (!r.ok) fail(r.error);
    console.log(
      r.deleted ? `deleted nftables table inet ${r.table}` : `no nftables table inet ${r.table}: nothing to flush`,
    );
  },
};
export default services;
