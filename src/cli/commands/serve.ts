// podsync serve: the node server, as `npm start` runs it from a checkout; for an installed package.
import type { Command } from "../command.js";

const serve: Command = {
  usage: ["serve"],
  help: `Start podsync on this node (the embedded default: Node, on 127.0.0.1:8484, talking to containerd's socket).
Settings come from the environment (PODSYNC_*, or a JSON file named by PODSYNC_CONFIG; see docs/node-agent.md). With no
keys configured it makes a dev key in ./.podsync on first start and prints how to use it. SIGINT or SIGTERM stops it.`,
  examples: [
    "podsync serve",
    "PODSYNC_POLICY=privileged PODSYNC_ALLOW_EXEC=true podsync serve",
    "PODSYNC_CRI_ENDPOINT=unix:///run/k3s/containerd/containerd.sock podsync serve",
  ],
  options: {},
  async run() {
    const { missingNodeFlags, shippedNodeFlags } = await import("../server-flags.js");
    const missing = missingNodeFlags(
      shippedNodeFlags(new URL("../../../package.json", import.meta.url).pathname),
      process.execArgv,
      process.env["NODE_OPTIONS"],
    );
    if (missing.length)
      process.stderr.write(
        `podsync serve: node was started without ${missing.join(" ")}, which npm start and the podsync command pass ` +
          "(idle memory is higher without it; docs/performance.md)\n",
      );
    (await import("../../node.js")).runNode();
  },
};
export default serve;
