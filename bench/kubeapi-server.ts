// The Node server (startNode, as `npm start` runs it, request log on stdout) as a separate process for
// bench/kubeapi.ts, so its CPU can be read from /proc apart from the watchers and the CRI stand-in.
import { startNode } from "../src/node.js";

const running = await startNode(process.env, false);
console.error(JSON.stringify({ url: running.url, pid: process.pid }));
process.on("SIGTERM", () => void running.close().then(() => process.exit(0)));
