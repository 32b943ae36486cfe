// /openapi.json: the pod schema is generated from the zod schema the server validates with, so the
// document cannot drift from what is accepted.
import { z } from "zod";
import { Pod } from "../pod/schema.js";

let cached: object | undefined;

const problem = { $ref: "#/components/schemas/Problem" };
const problemResponse = (description: string) => ({ description, content: { "application/problem+json": { schema: problem } } });
const errors = {
  "400": problemResponse("Malformed body or invalid pod spec (every failing field is listed in `errors`)"),
  "401": problemResponse("Missing or invalid signature"),
  "403": problemResponse("Signed for another node"),
  "409": problemResponse("Token already used (replay), or the pod is busy"),
  "413": problemResponse("Body too large"),
  "415": problemResponse("Unsupported content type"),
  "502": problemResponse("Container runtime error"),
  "503": problemResponse("Container runtime unavailable"),
  "504": problemResponse("Container runtime call timed out"),
};
const signedBody = {
  required: true,
  content: {
    "application/jose": { schema: { type: "string", description: "Compact JWS whose payload has iss, aud, exp, iat, jti, act and pod" } },
    "application/json": {
      schema: {
        oneOf: [
          { type: "object", required: ["jws"], additionalProperties: false, properties: { jws: { type: "string" } } },
          { $ref: "#/components/schemas/Pod", description: "with a Podsync-Signature header whose token has body_sha256" },
        ],
      },
    },
    "application/yaml": { schema: { $ref: "#/components/schemas/Pod" } },
  },
};
const bearer = [{ signedToken: [] }];

export function openApiDocument(): object {
  return (cached ??= {
    openapi: "3.1.0",
    info: { title: "podsync", version: "1", description: "Signed pod specs in, kubelet-style SyncPod over CRI out." },
    paths: {
      "/v1/pods/sync": { post: { summary: "Verify, validate, read CRI status, computePodActions + SyncPod", requestBody: signedBody, responses: { "200": { description: "All steps succeeded" }, "207": { description: "Some steps failed; body has ok:false and the failing steps" }, ...errors } } },
      "/v1/pods/plan": { post: { summary: "computePodActions only (dry run)", requestBody: signedBody, responses: { "200": { description: "The actions a sync would take" }, ...errors } } },
      "/v1/pods/{uid}/status": { get: { summary: "The pod's status as read from CRI", security: bearer, parameters: [{ name: "uid", in: "path", required: true, schema: { type: "string" } }], responses: { "200": { description: "Status" }, "404": problemResponse("No such pod on this node"), ...errors } } },
      "/v1/pods/{uid}": { delete: { summary: "Kill the pod and remove its containers and sandboxes", security: bearer, parameters: [{ name: "uid", in: "path", required: true, schema: { type: "string" } }], responses: { "200": { description: "Deleted (or nothing to delete)" }, "207": { description: "Some steps failed" }, ...errors } } },
      "/healthz": { get: { summary: "Process up", responses: { "200": { description: "ok" } } } },
      "/readyz": { get: { summary: "Container runtime reachable and RuntimeReady (CRI Version + Status)", responses: { "200": { description: "ready" }, "503": problemResponse("runtime unavailable") } } },
    },
    components: {
      securitySchemes: { signedToken: { type: "http", scheme: "bearer", bearerFormat: "JWS (act, uid, aud, iss, exp, iat, jti)" } },
      schemas: {
        Pod: z.toJSONSchema(Pod, { io: "input", unrepresentable: "any" }),
        Problem: {
          type: "object",
          required: ["type", "title", "status"],
          properties: {
            type: { type: "string" },
            title: { type: "string" },
            status: { type: "integer" },
            detail: { type: "string" },
            instance: { type: "string" },
            errors: { type: "array", items: { type: "object", properties: { path: { type: "string" }, message: { type: "string" } } } },
            grpcCode: { type: "string" },
          },
        },
      },
    },
  });
}
