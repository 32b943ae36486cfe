#!/usr/bin/env node
// Prunes the vendored upstream OpenAPI (openapi/kubernetes-v1.33/swagger.json.gz: kubernetes/kubernetes
// api/openapi-spec/swagger.json, release-1.33; see its README) to what a node's Kubernetes API serves, and writes
// src/kubeapi/apiserver/openapi.gen.ts: the v2 document (/openapi/v2) and one v3 document per group-version (/openapi/v3/*).
//   node scripts/openapi-prune.mjs        (npm run generate:openapi)
// Nothing is hand-written: paths, operations and definitions are upstream's, kept or dropped whole. The v3
// documents are made from the v2 one as kube-openapi's builder3 lays them out (components.schemas, a $ref with
// siblings wrapped in allOf, query parameters with a schema, the body as requestBody): the upstream v3 files
// describe the same definitions with the same text.
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const SOURCE = "openapi/kubernetes-v1.33/swagger.json.gz";
const OUT = "src/kubeapi/apiserver/openapi.gen.ts";

/** What the node serves, per group-version: resources, and subresources as `pods/log`. Add a line for a new kind. */
const SERVED = {
  "api/v1": [
    "pods",
    "pods/log",
    "pods/exec",
    "events",
    "nodes",
    "namespaces",
    "persistentvolumeclaims",
    "services",
    "endpoints",
    "replicationcontrollers",
  ],
  "apis/apps/v1": ["deployments", "replicasets", "statefulsets", "daemonsets"],
  "apis/batch/v1": ["jobs", "cronjobs"],
  "apis/discovery.k8s.io/v1": ["endpointslices"],
  "apis/autoscaling/v2": ["horizontalpodautoscalers"],
  "apis/policy/v1": ["poddisruptionbudgets"],
  "apis/authorization.k8s.io/v1": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
};

const text = gunzipSync(readFileSync(join(root, SOURCE))).toString("utf8");
const sha256 = createHash("sha256").update(text).digest("hex");
const spec = JSON.parse(text);

/** The v3 document a path belongs to ("api/v1", "apis/apps", "version"), and whether it is served. */
function place(path) {
  const discovery = /^\/(api|apis|apis\/[^/{]+|version)\/$/.exec(path);
  if (discovery) {
    const key = discovery[1];
    const groups = Object.keys(SERVED).map((gv) => gv.split("/").slice(0, -1).join("/"));
    const ok = key === "api" || key === "apis" || key === "version" || groups.includes(key);
    return ok ? key : undefined;
  }
  for (const [gv, resources] of Object.entries(SERVED)) {
    const base = `/${gv}/`;
    if (path === base) return gv;
    if (!path.startsWith(base)) continue;
    let segs = path.slice(base.length).split("/");
    if (segs[0] === "watch") segs = segs.slice(1);
    if (segs[0] === "namespaces" && segs[1] === "{namespace}" && segs.length >= 3) segs = segs.slice(2);
    if (segs.length > 3) return undefined;
    const name = segs.length === 3 ? `${segs[0]}/${segs[2]}` : segs[0];
    return resources.includes(name) ? gv : undefined;
  }
  return undefined;
}

const paths = Object.entries(spec.paths)
  .map(([p, item]) => [p, item, place(p)])
  .filter(([, , key]) => key !== undefined);

/** Every `#/definitions/X` (and `#/parameters/X`) a value refers to, closed over the definitions. */
function closure(values) {
  const defs = new Set();
  const params = new Set();
  const walk = (v) => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (!v || typeof v !== "object") return;
    for (const [k, x] of Object.entries(v)) {
      if (k === "$ref" && typeof x === "string") {
        if (x.startsWith("#/definitions/")) {
          const name = x.slice("#/definitions/".length);
          if (!defs.has(name)) {
            defs.add(name);
            walk(spec.definitions[name]);
          }
        } else if (x.startsWith("#/parameters/")) {
          const name = x.slice("#/parameters/".length);
          if (!params.has(name)) {
            params.add(name);
            walk(spec.parameters[name]);
          }
        }
      } else walk(x);
    }
  };
  values.forEach(walk);
  return { defs: [...defs].sort(), params: [...params].sort() };
}

const pick = (obj, keys) => Object.fromEntries(keys.map((k) => [k, obj[k]]));

// v2: the kept paths and what they refer to.
const all = closure(paths.map(([, item]) => item));
const v2 = {
  swagger: spec.swagger,
  info: spec.info,
  paths: Object.fromEntries(paths.map(([p, item]) => [p, item])),
  definitions: pick(spec.definitions, all.defs),
  parameters: pick(spec.parameters, all.params),
  securityDefinitions: spec.securityDefinitions,
  security: spec.security,
};

// v3, per group-version, as builder3 lays it out.
const ref3 = (r) => r.replace("#/definitions/", "#/components/schemas/");
function schema3(s) {
  if (Array.isArray(s)) return s.map(schema3);
  if (!s || typeof s !== "object") return s;
  const out = {};
  for (const [k, v] of Object.entries(s)) out[k] = k === "$ref" ? ref3(v) : schema3(v);
  if (out.$ref && Object.keys(out).length > 1) {
    const { $ref, ...rest } = out;
    return { ...rest, allOf: [{ $ref }] };
  }
  return out;
}
const resolveParam = (p) => (p.$ref ? spec.parameters[p.$ref.slice("#/parameters/".length)] : p);
function param3(p) {
  const { type, uniqueItems, items, ...rest } = resolveParam(p);
  return { ...rest, schema: { type, ...(items ? { items } : {}), ...(uniqueItems ? { uniqueItems } : {}) } };
}
function operation3(op) {
  const { parameters = [], responses = {}, consumes, produces, schemes: _s, ...rest } = op;
  const out = { ...rest };
  const ps = parameters.map(resolveParam);
  const body = ps.find((p) => p.in === "body");
  const others = ps.filter((p) => p.in !== "body");
  if (others.length) out.parameters = others.map(param3);
  if (body)
    out.requestBody = {
      content: Object.fromEntries((consumes ?? ["*/*"]).map((m) => [m, { schema: schema3(body.schema) }])),
      required: body.required ?? false,
    };
  out.responses = Object.fromEntries(
    Object.entries(responses).map(([code, r]) => [
      code,
      {
        description: r.description,
        ...(r.schema
          ? {
              content: Object.fromEntries(
                (produces ?? ["application/json"]).map((m) => [m, { schema: schema3(r.schema) }]),
              ),
            }
          : {}),
      },
    ]),
  );
  return out;
}
function item3(item) {
  const out = {};
  for (const [k, v] of Object.entries(item))
    out[k] =
      k === "parameters"
        ? v.map(param3)
        : ["get", "put", "post", "delete", "patch", "head", "options"].includes(k)
          ? operation3(v)
          : v;
  return out;
}
const v3 = {};
for (const key of [...new Set(paths.map(([, , k]) => k))].sort()) {
  const mine = paths.filter(([, , k]) => k === key);
  const { defs } = closure(mine.map(([, item]) => item));
  v3[key] = {
    openapi: "3.0.0",
    info: spec.info,
    paths: Object.fromEntries(mine.map(([p, item]) => [p, item3(item)])),
    components: {
      schemas: Object.fromEntries(defs.map((d) => [d, schema3(spec.definitions[d])])),
      securitySchemes: {
        BearerToken: {
          type: "apiKey",
          description: "Bearer Token authentication",
          name: "authorization",
          in: "header",
        },
      },
    },
  };
}

const lines = [
  `// Generated by scripts/openapi-prune.mjs from ${SOURCE} (kubernetes/kubernetes api/openapi-spec/swagger.json,`,
  `// release-1.33, sha256 ${sha256}), pruned to what a node serves. Do not edit: run npm run generate:openapi.`,
  "",
  "/** /openapi/v2 as JSON text. */",
  `export const OPENAPI_V2 = ${JSON.stringify(JSON.stringify(v2))};`,
  "",
  "/** /openapi/v3/<key> as JSON text, by key (api/v1, apis/apps/v1, ...). */",
  "export const OPENAPI_V3: Readonly<Record<string, string>> = {",
  ...Object.entries(v3).map(([k, d]) => `  ${JSON.stringify(k)}: ${JSON.stringify(JSON.stringify(d))},`),
  "};",
  "",
];
writeFileSync(join(root, OUT), lines.join("\n"));
console.log(
  `${OUT}: ${paths.length} of ${Object.keys(spec.paths).length} paths, ${all.defs.length} of ${Object.keys(spec.definitions).length} definitions, v3 documents: ${Object.keys(v3).join(", ")}`,
);
