// Package types/ — declarations for the part of an untyped dependency podsync uses (ws).
// Declarations only: imports nothing of src/.
//
// The part of ws 8's API that src/kubeapi/exec-stream.ts uses, declared here rather than through @types/ws:
// ws itself is already in every checkout's node_modules (wrangler's miniflare depends on the same 8.18.0), so a
// checkout whose node_modules predates this dependency still typechecks and runs.
declare module "ws" {
  import type { IncomingMessage } from "node:http";
  import type { Duplex } from "node:stream";

  export type RawData = Buffer | ArrayBuffer | Buffer[];

  export class WebSocket {
    constructor(address: string, protocols?: string | string[]);
    constructor(
      address: string | URL,
      protocols: string | string[],
      options: {
        maxPayload?: number;
        headers?: Record<string, string>;
        handshakeTimeout?: number;
        perMessageDeflate?: boolean;
      },
    );
    // The fleet link (src/http/fleet/link.ts): headers on the upgrade, a bound on what it takes.
    constructor(
      address: string | URL,
      options: { headers?: Record<string, string>; maxPayload?: number; handshakeTimeout?: number },
    );
    readonly protocol: string;
    /** 0 CONNECTING, 1 OPEN, 2 CLOSING, 3 CLOSED. */
    readonly readyState: number;
    /** Bytes queued for the socket and not yet handed to the kernel. */
    readonly bufferedAmount: number;
    readonly isPaused: boolean;
    send(data: RawData | Uint8Array | string, options?: { binary?: boolean }, cb?: (err?: Error) => void): void;
    /** Stop reading the socket (TCP's window then stops the peer); `resume` reads again. */
    pause(): void;
    ping(): void;
    resume(): void;
    close(code?: number, reason?: string): void;
    terminate(): void;
    on(event: "message", listener: (data: RawData, isBinary: boolean) => void): this;
    on(event: "close", listener: (code: number, reason: Buffer) => void): this;
    on(event: "error", listener: (err: Error) => void): this;
    on(event: "open", listener: () => void): this;
    on(event: "unexpected-response", listener: (req: unknown, res: IncomingMessage) => void): this;
    once(event: "open", listener: () => void): this;
    once(event: "close", listener: (code: number, reason: Buffer) => void): this;
    once(event: "error", listener: (err: Error) => void): this;
  }

  export class WebSocketServer {
    constructor(options: {
      noServer: true;
      maxPayload?: number;
      handleProtocols?: (protocols: Set<string>, request: IncomingMessage) => string | false;
    });
    /** The handshake's response lines, before they are written (they may be changed). */
    on(event: "headers", listener: (headers: string[], request: IncomingMessage) => void): this;
    handleUpgrade(
      request: IncomingMessage,
      socket: Duplex,
      upgradeHead: Buffer,
      callback: (ws: WebSocket, request: IncomingMessage) => void,
    ): void;
  }
}
