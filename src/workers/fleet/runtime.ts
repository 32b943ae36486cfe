// The few workerd shapes the fleet's Durable Object uses (SQLite storage, hibernatable WebSockets), kept local as
// durable-object.ts keeps its own, rather than pulling the global workers types into a project that also
// type-checks against Node's and the DOM's.
export interface SqlCursor<T> extends Iterable<T> {
  toArray(): T[];
  one(): T;
  readonly rowsRead: number;
  readonly rowsWritten: number;
}
export interface SqlStorage {
  exec<T = Record<string, string | number | null>>(query: string, ...bindings: unknown[]): SqlCursor<T>;
}
export interface HibernatableSocket {
  send(message: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
  serializeAttachment(value: unknown): void;
  deserializeAttachment(): unknown;
  readonly readyState: number;
}
export interface FleetShardState {
  storage: {
    sql: SqlStorage;
    getAlarm(): Promise<number | null>;
    setAlarm(at: number): Promise<void>;
  };
  acceptWebSocket(ws: HibernatableSocket, tags?: string[]): void;
  getWebSockets(tag?: string): HibernatableSocket[];
  setWebSocketAutoResponse(pair?: unknown): void;
  getWebSocketAutoResponseTimestamp(ws: HibernatableSocket): Date | null;
}

/** workerd's globals for a WebSocket server, absent from Node's and the DOM's types. */
interface WorkerdGlobals {
  WebSocketPair: new () => { 0: HibernatableSocket; 1: HibernatableSocket };
  WebSocketRequestResponsePair: new (request: string, response: string) => unknown;
}
/** workerd's globals; undefined outside workerd. */
export function workerd(): WorkerdGlobals {
  const g = globalThis as Partial<WorkerdGlobals>;
  if (!g.WebSocketPair || !g.WebSocketRequestResponsePair) throw new Error("not running in workerd");
  return { WebSocketPair: g.WebSocketPair, WebSocketRequestResponsePair: g.WebSocketRequestResponsePair };
}

/** A 101 answer handing `client` to the caller (workerd's ResponseInit takes `webSocket`). */
export const upgraded = (client: HibernatableSocket): Response =>
  new Response(null, { status: 101, webSocket: client } as ResponseInit);
