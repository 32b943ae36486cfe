// The API server's protobuf wire form (apimachinery/pkg/runtime/serializer/protobuf/protobuf.go): the 4-byte
// magic "k8s\0", then a runtime.Unknown whose typeMeta names the object and whose raw is the object's own message.
// Content type application/vnd.kubernetes.protobuf. The messages are upstream's generated.proto (proto/k8s.io/).
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { TypeMetaSchema, UnknownSchema } from "../../gen/k8s.io/apimachinery/pkg/runtime/generated_pb.js";
import { KubeStatusError } from "../status.js";

const MAGIC = new Uint8Array([0x6b, 0x38, 0x73, 0x00]);

/** Decode an enveloped object of the expected kind; a 400 Status naming what is wrong otherwise. */
export function decodeEnveloped<D extends DescMessage>(
  body: Uint8Array,
  schema: D,
  want: { apiVersion: string; kind: string },
): MessageShape<D> {
  if (body.length < 4 || !MAGIC.every((b, i) => body[i] === b))
    throw new KubeStatusError(400, "BadRequest", 'the protobuf body does not start with the "k8s\\x00" prefix');
  let unknown: ReturnType<typeof fromBinary<typeof UnknownSchema>>;
  try {
    unknown = fromBinary(UnknownSchema, body.subarray(4));
  } catch (e) {
    throw new KubeStatusError(400, "BadRequest", `the protobuf envelope does not decode: ${(e as Error).message}`);
  }
  const tm = unknown.typeMeta;
  if (tm && (tm.apiVersion !== want.apiVersion || tm.kind !== want.kind))
    throw new KubeStatusError(
      400,
      "BadRequest",
      `the body is ${tm.apiVersion}/${tm.kind}, not the ${want.apiVersion}/${want.kind} this path takes`,
    );
  try {
    return fromBinary(schema, unknown.raw);
  } catch (e) {
    throw new KubeStatusError(400, "BadRequest", `the ${want.kind} does not decode: ${(e as Error).message}`);
  }
}

/** Encode an object in the envelope. */
export function encodeEnveloped<D extends DescMessage>(
  schema: D,
  msg: MessageShape<D>,
  type: { apiVersion: string; kind: string },
): Uint8Array<ArrayBuffer> {
  const env = toBinary(
    UnknownSchema,
    create(UnknownSchema, {
      typeMeta: create(TypeMetaSchema, type),
      raw: toBinary(schema, msg),
      contentEncoding: "",
      contentType: "",
    }),
  );
  const out = new Uint8Array(4 + env.length);
  out.set(MAGIC);
  out.set(env, 4);
  return out;
}
