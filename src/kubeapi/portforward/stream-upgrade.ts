// Package kubeapi/portforward — kubectl port-forward and SPDY exec: the upgrade, joined to the runtime's streams.
// Imports the front door, the use cases' streams and kubeapi's exec checks; never an entry point.
//
// The node's upgrade handler: exec over WebSocket (kubectl 1.30+) is exec-stream.ts's; exec over SPDY (kubectl
// 1.27–1.29) and port-forward (plain SPDY, or SPDY tunnelled through a WebSocket) are spdy-upgrade.ts's; any
// other upgrade is refused there with a Status.
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { EXEC_PATH } from "../exec-check.js";
import { execUpgrade } from "../exec-stream.js";
import { type SpdyUpgradeOptions, spdyUpgrade } from "./spdy-upgrade.js";

export function streamUpgrade(o: SpdyUpgradeOptions): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  const ws = execUpgrade(o);
  const spdy = spdyUpgrade(o);
  return (req, socket, head) => {
    const path = new URL(req.url ?? "/", "http://node").pathname;
    const websocket = String(req.headers.upgrade ?? "").toLowerCase() === "websocket";
    (EXEC_PATH.test(path) && websocket ? ws : spdy)(req, socket, head);
  };
}
