// Package http/fleet/ — the fleet link (pull mode): its wire protocol, the node's identity and the link (HTTP layer).
// Imports http/ (the node's own routes take the fleet's sets), auth/ and below; never an entry point.
//
// http/fleet/: pull mode's front, shared by the Worker's registry (src/workers/fleet/) and the node's link (link.ts).
// This file is the wire protocol between a node agent and its registry shard: the paths, the heartbeat and the
// messages, each checked with zod on receipt. Pure: no I/O.
import { z } from "zod";

export const FLEET_PATHS = {
  enroll: "/fleet/enroll",
  connect: "/fleet/connect",
  nodes: "/fleet/nodes",
  audit: "/fleet/audit",
} as const;

/** The owner's verbs (a fleet-owner token's `act`), as issue #38 names them. */
export const FLEET_ACTS = ["read", "enroll", "label", "revoke", "apply", "rollout", "approve", "rollback"] as const;
export type FleetAct = (typeof FLEET_ACTS)[number];

/** The heartbeat: the node sends PING every interval; the shard answers PONG without waking (Durable Objects'
 * setWebSocketAutoResponse). The node drops a connection that heard nothing for `deadMs` (a half-open one is found
 * within 60 s); the registry calls a node NotReady after SILENT_MS without a ping (kubelet's node-monitor grace
 * period, 40 s). */
export const HEARTBEAT = { ping: "ping", pong: "pong", intervalMs: 15_000, deadMs: 45_000 } as const;
export const SILENT_MS = 40_000;

/** WebSocket close codes the shard uses; the node does not reconnect on REVOKED. */
export const CLOSE = { tooLarge: 1009, policy: 1008, revoked: 4003, replaced: 4001, silent: 4008 } as const;

// Kubernetes label syntax (apimachinery validation IsQualifiedName / IsValidLabelValue).
const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;
export const Labels = z.record(
  z.string().max(316).regex(LABEL_KEY, "a label key: [prefix/]name of alphanumerics, '-', '_', '.'"),
  z.string().max(63).regex(LABEL_VALUE, "a label value: at most 63 alphanumerics, '-', '_', '.'"),
);
export const NodeName = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, "a node name: lowercase alphanumerics, '-' and '.' (RFC 1123)");

/** `k=v,k2=v2` (CLI and join-token labels); an error names the bad pair. */
export function parseLabelPairs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of text.split(",").map((p) => p.trim())) {
    if (!pair) continue;
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new Error(`label "${pair}": write key=value`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const r = Labels.safeParse(out);
  if (!r.success)
    throw new Error(`labels: ${r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return r.data;
}

export const Capacity = z.record(z.string().max(64), z.string().max(64));

/** The node's first message on each connection. */
export const Hello = z.strictObject({
  type: z.literal("hello"),
  node: NodeName,
  /** The generation of the desired set the node has applied (0: none). */
  generation: z.number().int().min(0),
  version: z.string().max(64),
  capacity: Capacity.optional(),
});

export const PodSummary = z.strictObject({
  namespace: z.string().max(253),
  name: z.string().max(253),
  uid: z.string().max(128),
  phase: z.string().max(32),
  ready: z.boolean(),
  restarts: z.number().int().min(0),
});
export type PodSummary = z.infer<typeof PodSummary>;

/** What the node reports on change only: the generation applied, each pod's phase, readiness and restarts, and
 * the last error (an apply refused, a sync that failed). */
export const StatusReport = z.strictObject({
  type: z.literal("status"),
  node: NodeName,
  generation: z.number().int().min(0),
  pods: z.array(PodSummary).max(1000),
  error: z.string().max(1000).optional(),
});
export type StatusReport = z.infer<typeof StatusReport>;

// Streams over the same connection (kubectl's reads, `logs -f`): the Worker opens a stream with one HTTP request for
// the node's own API; the node answers with a head, data and an end. Each stream has its own credit: the node sends
// at most `windowBytes` not yet granted back, and the Worker grants bytes back as its reader takes them, so a slow
// reader stops only its own stream. Data is base64 in JSON text frames, at most `chunkBytes` a frame (under the
// node's message limit, PODSYNC_FLEET_MAX_MESSAGE_BYTES).
export const STREAM = {
  /** Bytes a stream may have in flight or queued at the Worker before the node waits for credit. */
  windowBytes: 64 * 1024,
  /** The most raw bytes in one data frame (~22 KiB in base64). */
  chunkBytes: 16 * 1024,
  /** Open streams a node serves at once; more are refused (503). */
  maxStreams: 32,
  /** The node's answer's head must arrive within this. */
  headTimeoutMs: 30_000,
  /** The largest request body a stream carries (the read side sends none). */
  maxRequestBodyBytes: 64 * 1024,
  /** A session's one WebSocket message, reassembled from its frames (kubectl sends stdin in 32 KiB messages). */
  maxSessionMessageBytes: 1024 * 1024,
  /** What the Worker holds of a session's client messages (stdin) the node has not granted credit for yet; over
   * it the session is closed (1009): workerd cannot pause a WebSocket's reads (cloudflare/workerd#988). */
  sessionQueueBytes: 1024 * 1024,
} as const;
/** The one path a POST stream may take (kubeapi/exec-check.ts EXEC_PATH's shape; the node's routes only refuse it). */
export const EXEC_POST_PATH = /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/exec$/;
const StreamId = z
  .number()
  .int()
  .min(1)
  .max(2 ** 31);
const Headers = z.array(z.tuple([z.string().max(256), z.string().max(8192)])).max(64);

/** Worker → node: a request for the node's own API (path with query, the caller's headers). With `upgrade`, a
 * WebSocket session (kubectl exec): the node answers 101 and the stream carries whole messages both ways. POST
 * only for an exec path without a body (kubectl's SPDY fallback: the node's own exec gates answer it). */
export const StreamOpen = z.strictObject({
  type: z.literal("open"),
  id: StreamId,
  method: z.enum(["GET", "HEAD", "POST"]),
  path: z.string().min(1).max(8192),
  headers: Headers,
  upgrade: z.literal("websocket").optional(),
});
/** Worker → node: `bytes` more may be sent on stream `id`. */
export const StreamCredit = z.strictObject({
  type: z.literal("credit"),
  id: StreamId,
  bytes: z.number().int().min(1),
});
/** Worker → node: the reader went away. */
export const StreamCancel = z.strictObject({ type: z.literal("cancel"), id: StreamId });
/** Node → Worker: the answer's status and headers. */
export const StreamHead = z.strictObject({
  type: z.literal("head"),
  id: StreamId,
  status: z.number().int().min(100).max(599),
  headers: Headers,
});
/** Body bytes (base64), node → Worker; in a session both ways, where `more` says the message goes on in the next
 * frame (a WebSocket message is one frame or several, never two messages in one). */
export const StreamData = z.strictObject({
  type: z.literal("data"),
  id: StreamId,
  data: z.string().max(Math.ceil((STREAM.chunkBytes * 4) / 3) + 4),
  more: z.literal(true).optional(),
});
/** The body ended (an error if it broke off), node → Worker; in a session either side closed it. */
export const StreamEnd = z.strictObject({
  type: z.literal("end"),
  id: StreamId,
  error: z.string().max(1000).optional(),
});
export type StreamOpen = z.infer<typeof StreamOpen>;
export type StreamFrame = z.infer<typeof StreamHead> | z.infer<typeof StreamData> | z.infer<typeof StreamEnd>;
export type StreamData = z.infer<typeof StreamData>;
export type StreamCredit = z.infer<typeof StreamCredit>;

export const NodeMessage = z.discriminatedUnion("type", [
  Hello,
  StatusReport,
  StreamHead,
  StreamData,
  StreamEnd,
  StreamCredit,
]);
export type NodeMessage = z.infer<typeof NodeMessage>;

/** The owner-signed desired set, exactly as the owner sent it (PUT /v1/node/pods's body and signature): the node
 * verifies it against its own keys. */
export const DesiredMessage = z.strictObject({
  type: z.literal("desired"),
  generation: z.number().int().min(1),
  contentType: z.string().max(100),
  body: z.string(),
  // A set for many nodes lists them all in its aud (PUT /fleet/v1/node/pods).
  signature: z
    .string()
    .max(1024 * 1024)
    .optional(),
});
export type DesiredMessage = z.infer<typeof DesiredMessage>;

export const ErrorMessage = z.strictObject({
  type: z.literal("error"),
  reason: z.string(),
  message: z.string(),
});
export type ErrorMessage = z.infer<typeof ErrorMessage>;

export const FleetMessage = z.discriminatedUnion("type", [
  DesiredMessage,
  ErrorMessage,
  StreamOpen,
  StreamCredit,
  StreamCancel,
  StreamData,
]);
export type FleetMessage = z.infer<typeof FleetMessage>;

/** The enrollment request: the join token's single use. */
export const EnrollRequest = z.strictObject({
  token: z.string().min(1).max(16_384),
  node: NodeName,
  /** The node's public key (ES256), which signs its connections from now on. */
  jwk: z.looseObject({ kty: z.literal("EC"), crv: z.literal("P-256"), x: z.string(), y: z.string() }),
  version: z.string().max(64).default("unknown"),
  capacity: Capacity.default({}),
});
export type EnrollRequest = z.input<typeof EnrollRequest>;

/** The shard a node's row lives in: FNV-1a of its name, mod the shard count (fixed for a fleet's life). */
export function shardOf(node: string, shards: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < node.length; i++) {
    h ^= node.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shards;
}
