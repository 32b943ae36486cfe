// Package kubeapi/apiserver/ — what the API server itself serves: OpenAPI, namespaces, query parsing, its defaults.
// Imports ../ (status, table, watch hub) and the model; never the runtime or an entry point.
//
// /openapi/v2 and /openapi/v3 as the API server's handlers answer them (kube-openapi's handler and handler3):
// upstream's v1.33 documents pruned to what the node serves (src/kubeapi/apiserver/openapi.gen.ts, made by
// scripts/openapi-prune.mjs from the vendored spec). v3's root lists each group-version's document at a URL with
// its hash; that URL answers immutable (a client caches it by hash), and an old hash is redirected to the current
// one. The documents are loaded at the first request, so a node nobody asks never holds them.
// Not served: v2 as protobuf (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`): 406, and client-go
// then tries the pre-1.10 path, which is not served either; kubectl's explain and apply read v3 as JSON.
import type { Hono } from "hono";
import { KubeStatusError, noSuchResource } from "../status.js";

type Docs = { v2: string; v3: Map<string, { text: string; hash: string }> };

async function sha512hex(text: string): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-512", new TextEncoder().encode(text)));
  return [...d]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("")
    .toUpperCase();
}

/** The client takes JSON (or anything): not only v2's protobuf form. */
function acceptsJson(accept: string | undefined): boolean {
  if (!accept) return true;
  return accept.split(",").some((p) => {
    const t = p.split(";")[0]!.trim().toLowerCase();
    return t === "application/json" || t === "*/*" || t === "application/*";
  });
}

export function registerOpenApi<E extends object>(app: Hono<E>): void {
  let docs: Promise<Docs> | undefined;
  const load = () =>
    (docs ??= import("./openapi.gen.js").then(async (g) => {
      const v3 = new Map<string, { text: string; hash: string }>();
      for (const [key, text] of Object.entries(g.OPENAPI_V3)) v3.set(key, { text, hash: await sha512hex(text) });
      return { v2: g.OPENAPI_V2, v3 };
    }));
  const json = { "content-type": "application/json" };

  app.get("/openapi/v2", async (c) => {
    if (!acceptsJson(c.req.header("accept")))
      throw new KubeStatusError(406, "NotAcceptable", "only application/json is served for /openapi/v2 here", {});
    return c.body((await load()).v2, 200, json);
  });
  app.get("/openapi/v3", async (c) => {
    const paths = Object.fromEntries(
      [...(await load()).v3].map(([key, d]) => [key, { serverRelativeURL: `/openapi/v3/${key}?hash=${d.hash}` }]),
    );
    return c.json({ paths });
  });
  app.get("/openapi/v3/*", async (c) => {
    const key = c.req.path.slice("/openapi/v3/".length);
    const d = (await load()).v3.get(key);
    if (!d) throw noSuchResource();
    const hash = c.req.query("hash");
    if (hash !== undefined && hash !== d.hash) return c.redirect(`/openapi/v3/${key}?hash=${d.hash}`, 301);
    return c.body(d.text, 200, {
      ...json,
      etag: `"${d.hash}"`,
      ...(hash
        ? { "cache-control": "public, immutable", expires: new Date(Date.now() + 365 * 86_400_000).toUTCString() }
        : {}),
    });
  });
}
