// The protobuf media type of the API server (application/vnd.kubernetes.protobuf) and how a request asks for it:
// apart from k8s-proto.ts, so that a route can tell without loading the codec.

export const PROTOBUF_TYPE = "application/vnd.kubernetes.protobuf";

/** The request body is protobuf (its Content-Type says so). */
export const isProtobuf = (contentType: string | undefined) =>
  (contentType ?? "").split(";")[0]!.trim().toLowerCase() === PROTOBUF_TYPE;

/** The client asks for protobuf before JSON (the first of its Accept types that the server can answer). */
export function wantsProtobuf(accept: string | undefined): boolean {
  for (const part of (accept ?? "").split(",")) {
    const t = part.split(";")[0]!.trim().toLowerCase();
    if (t === PROTOBUF_TYPE) return true;
    if (t === "application/json" || t === "*/*" || t === "application/*") return false;
  }
  return false;
}
