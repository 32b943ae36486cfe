// One Services data plane per machine. The nftables table and the cluster DNS's address belong to the network
// namespace, so a second node running its own would overwrite the first one's rules at each of its syncs (kube-proxy
// is one per node for the same reason). The hold is an abstract unix socket named after the table: its namespace is
// the network namespace, the table's own scope, and the kernel frees it when its process exits, however it exits,
// so a killed node leaves nothing stale. A node that finds it taken asks the holder who it is, for its message.
import { createConnection, createServer } from "node:net";

export type DataplaneHold = { held: true; release(): Promise<void> } | { held: false; reason: string };

/** Who holds the data plane, as the holder answers a connection. */
interface Holder {
  node: string;
  pid: number;
}

const socketPath = (table: string) => `\0podsync-dataplane-${table}`;

/** Take the machine's data plane for the table `inet <table>`, or say who has it. */
export async function holdDataplane(table: string, node: string): Promise<DataplaneHold> {
  const path = socketPath(table);
  const me: Holder = { node, pid: process.pid };
  const server = createServer((sock) => sock.on("error", () => undefined).end(`${JSON.stringify(me)}\n`));
  const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    server.once("error", resolve);
    server.listen({ path }, () => resolve(undefined));
  });
  if (!error) {
    // The hold never keeps the process running by itself.
    server.unref();
    return { held: true, release: () => new Promise<void>((r) => server.close(() => r())) };
  }
  if (error.code !== "EADDRINUSE")
    return { held: false, reason: `the machine's data plane hold could not be taken: ${error.message}` };
  const holder = await askHolder(path);
  return {
    held: false,
    reason:
      `another podsync node on this machine runs the Services data plane (the nftables table inet ${table} and the ` +
      `cluster DNS): ${holder ? `node "${holder.node}", pid ${holder.pid}` : "a process that did not say which"}. ` +
      "One node per machine runs it: stop that node, or set PODSYNC_SERVICE_DATAPLANE=off on this one",
  };
}

/** The holder's answer, or undefined when it says nothing within a second. */
function askHolder(path: string): Promise<Holder | undefined> {
  return new Promise((resolve) => {
    let text = "";
    const sock = createConnection({ path });
    const done = (h: Holder | undefined) => (clearTimeout(timer), sock.destroy(), resolve(h));
    const timer = setTimeout(() => done(undefined), 1000);
    sock.setEncoding("utf8");
    sock.on("data", (d: string) => (text += d).length > 4096 && done(undefined));
    sock.on("error", () => done(undefined));
    sock.on("end", () => done(parseHolder(text)));
  });
}

function parseHolder(text: string): Holder | undefined {
  try {
    const h = JSON.parse(text) as Partial<Holder>;
    return typeof h.node === "string" && typeof h.pid === "number" ? { node: h.node, pid: h.pid } : undefined;
  } catch {
    return undefined;
  }
}
