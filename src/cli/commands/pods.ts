// podsync pods: kubectl get pods -A over the node's pods (one namespace with -n).
import type { Command } from "../command.js";
import { listOptions, runGet } from "./get.js";

const pods: Command = {
  usage: ["pods [-n NS] [-l SELECTOR] [-o wide|name|json|yaml|jsonpath=T] [-w] [--no-headers]"],
  help: "The node's pods in every namespace (or -n's), as kubectl get pods -A prints them. Its orphans (pods podsync\nmade that the node no longer wants) are noted on stderr.",
  examples: ["podsync pods", "podsync pods -o wide", "podsync pods -o name", "podsync pods -o json"],
  options: listOptions,
  run: (ctx) => runGet(ctx, ["pods", ...ctx.args], { allNamespaces: true }),
};
export default pods;
