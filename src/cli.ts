// podsync CLI: keygen | sign | sync | plan | apply | pods | get | status | delete | logs | exec.
//   podsync keygen [--out DIR] [--alg EdDSA|ES256] [--iss NAME]
//   podsync sign POD.yaml --key KEY.json --aud NODE [--act sync|plan] [--ttl 60]
//   podsync sync POD.yaml [--url URL] [--key KEY.json] [--aud NODE] [--plan] [--json]
//   podsync apply NODE.yaml --generation N [--detached] [--json]   (the node's whole desired set)
//   podsync pods [-o json|yaml]       (the desired pods and the orphans, as kubectl get pods -A prints them)
//   podsync get UID [-o json|yaml]    (kubectl's NAME READY STATUS RESTARTS AGE)
//   podsync status UID | delete UID  [--url URL] [--key KEY.json] [--aud NODE] [--json]
//   podsync logs UID [-c NAME] [-f] [--tail N] [--previous] [--timestamps] [--since 10m]
//   podsync exec UID [-c NAME] [--timeout S] -- CMD ARGS...
//   podsync volumes [--json] | podsync volumes rm NAME
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { JWK } from "jose";
import type { SigningAlg } from "./auth/keys.js";
import type { V1Pod } from "./kuberuntime/api-status.js";
// jose, yaml, ./auth/keys and ./kubectl-print are imported where a command needs them: `--help` and argument
// errors then answer without loading them (start-up time).

const USAGE = `usage:
  podsync keygen [--out DIR] [--alg EdDSA|ES256] [--iss ISSUER]       write DIR/key.json (private) and DIR/jwks.json (public)
  podsync sign POD.(yaml|json) --key KEY.json --aud NODE [--act sync|plan] [--ttl SECONDS]
                                                                     print a compact JWS carrying the pod
  podsync sync POD.(yaml|json) [--url URL] [--key KEY.json] [--aud NODE] [--plan] [--json]
                                                                     sign and POST to /v1/pods/sync (or /plan)
  podsync apply NODE.(yaml|json) --generation N [--detached] [--json] [--url URL] [--key KEY.json] [--aud NODE]
                                                                     make the file's pods (YAML documents, or a v1.List) the
                                                                     node's whole desired set: PUT /v1/node/pods; pods the
                                                                     node held that the file leaves out are deleted
  podsync pods [-o json|yaml] [--url URL] [--key KEY.json] [--aud NODE]
                                                                     the node's desired pods and orphans, like kubectl get pods -A
  podsync get UID [-o json|yaml] [--url URL] [--key KEY.json] [--aud NODE]
                                                                     the pod as kubectl get pods shows it, or the v1.Pod
  podsync status UID | podsync delete UID [--url URL] [--key KEY.json] [--aud NODE] [--json]
  podsync logs UID [-c NAME] [-f] [--tail N] [--previous] [--timestamps] [--since 10s|5m|1h]
                                                                     the container's log, like kubectl logs
  podsync exec UID [-c NAME] [--timeout SECONDS] -- CMD [ARGS...]     run a command in the container (the node owner
                                                                     must allow exec); exits with its exit code
  podsync volumes [--json] | podsync volumes rm NAME                 the node's persistentVolumeClaim directories; remove one
                                                                     (refused while a pod uses it)
defaults: --url $PODSYNC_URL or http://127.0.0.1:8080, --key $PODSYNC_KEY or .podsync/dev-key.json,
          --aud the node name the server reports on /healthz, --iss the key file's "iss" or "podsync-dev"`;

type Opts = Record<string, string | boolean | undefined>;

/** A usage or input error. Thrown, not process.exit: the bottom of this file turns every error into the message
 * and exit code 2, and pending output is still flushed. */
function fail(msg: string): never {
  throw new Error(msg);
}

function loadKey(path: string): JWK & { iss?: string } {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as JWK & { iss?: string };
  } catch (e) {
    return fail(`cannot read key ${path}: ${(e as Error).message} (make one with: podsync keygen)`);
  }
}

/** The pod file as the signed payload's claims: `pod`, and the ConfigMaps and Secrets that came with it (a
 * YAML stream or a v1 List, as `podman kube play` reads them). The node validates it all. */
async function readPod(path: string): Promise<{ pod: unknown; configMaps?: unknown[]; secrets?: unknown[] }> {
  const text = path === "-" ? readFileSync(0, "utf8") : readFileSync(path, "utf8");
  const yaml = path.endsWith(".json") ? undefined : await import("yaml");
  let docs: unknown[];
  try {
    docs = yaml
      ? [yaml.parseAllDocuments(text)].flat().map((d) => {
          if (d.errors[0]) throw d.errors[0];
          return d.toJS() as unknown;
        })
      : [JSON.parse(text)];
  } catch (e) {
    return fail(`${path}: ${(e as Error).message}`);
  }
  const kindOf = (d: unknown) => (typeof d === "object" && d !== null ? (d as { kind?: unknown }).kind : undefined);
  const all = docs.flatMap((d) => (kindOf(d) === "List" ? ((d as { items?: unknown[] }).items ?? []) : d === null ? [] : [d]));
  const pods = all.filter((d) => kindOf(d) === "Pod" || kindOf(d) === undefined);
  if (pods.length !== 1) fail(`${path}: expected one Pod, found ${pods.length}`);
  const configMaps = all.filter((d) => kindOf(d) === "ConfigMap");
  const secrets = all.filter((d) => kindOf(d) === "Secret");
  const other = all.find((d) => !["Pod", "ConfigMap", "Secret", undefined].includes(kindOf(d) as string));
  if (other) fail(`${path}: unsupported kind ${JSON.stringify(kindOf(other))} (a Pod with its ConfigMaps and Secrets)`);
  return { pod: pods[0], ...(configMaps.length ? { configMaps } : {}), ...(secrets.length ? { secrets } : {}) };
}

/** The pods of a node file: YAML documents (empty ones skipped) or one v1.List; JSON: a v1.List or one pod. */
async function readPods(path: string, text: string, json: boolean): Promise<unknown[]> {
  let docs: unknown[];
  try {
    docs = json ? [JSON.parse(text)] : (await import("yaml")).parseAllDocuments(text).map((d) => {
      if (d.errors[0]) throw d.errors[0];
      return d.toJS();
    });
  } catch (e) {
    return fail(`${path}: ${(e as Error).message}`);
  }
  docs = docs.filter((d) => d !== null && d !== undefined);
  const first = docs[0] as { kind?: unknown; items?: unknown } | undefined;
  if (docs.length === 1 && first?.kind === "List") {
    if (!Array.isArray(first.items)) fail(`${path}: a v1.List needs "items"`);
    return first.items as unknown[];
  }
  return docs;
}

async function signToken(key: JWK & { iss?: string }, claims: Record<string, unknown>, aud: string, ttlSeconds: number, iss: string | undefined): Promise<string> {
  if (!key.alg || !key.d) fail("the key file must be a private JWK with alg (from podsync keygen)");
  const { importJWK, SignJWT } = await import("jose");
  const k = await importJWK(key, key.alg);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, ...(key.kid ? { kid: key.kid } : {}), typ: "JWT" })
    .setIssuer(iss ?? key.iss ?? "podsync-dev")
    .setAudience(aud)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .setJti(crypto.randomUUID())
    .sign(k);
}

async function nodeName(url: string): Promise<string> {
  try {
    const r = await fetch(`${url}/healthz`);
    const j = (await r.json()) as { node?: string };
    if (j.node) return j.node;
  } catch (e) {
    fail(`cannot reach ${url}: ${(e as Error).message}`);
  }
  return fail(`${url}/healthz did not say the node name; pass --aud`);
}

interface Step {
  action: string;
  target: string;
  ok: boolean;
  error?: string;
  message?: string;
  durationMs: number;
}

function printResult(status: number, body: Record<string, unknown>) {
  if (body["type"] && body["title"]) {
    console.log(`✗ ${status} ${body["title"]}: ${body["detail"] ?? ""}`);
    for (const e of (body["errors"] as { path: string; message: string }[] | undefined) ?? []) console.log(`    ${e.path}: ${e.message}`);
    return;
  }
  const pod = body["pod"] as { namespace: string; name: string; uid: string } | undefined;
  if (pod) console.log(`pod ${pod.namespace}/${pod.name} (${pod.uid}): ${body["ok"] === false ? "NOT OK" : "ok"} [HTTP ${status}]`);
  const a = body["actions"] as Record<string, unknown> | undefined;
  if (a) {
    const parts = [
      a["killPod"] ? "kill pod" : "",
      a["createSandbox"] ? `create sandbox (attempt ${a["attempt"]})` : "",
      a["nextInitContainerToStart"] ? `init ${a["nextInitContainerToStart"]}` : "",
      (a["containersToStart"] as string[]).length ? `start ${(a["containersToStart"] as string[]).join(", ")}` : "",
      (a["containersToKill"] as unknown[]).length ? `kill ${(a["containersToKill"] as { name: string }[]).map((k) => k.name).join(", ")}` : "",
    ].filter(Boolean);
    console.log(`  actions: ${parts.join("; ") || "none (converged)"}`);
  }
  for (const s of (body["steps"] as Step[] | undefined) ?? [])
    console.log(`  ${s.ok ? "✓" : "✗"} ${s.action.padEnd(16)} ${s.target.padEnd(24)} ${String(s.durationMs.toFixed(1)).padStart(8)} ms  ${s.ok ? (s.message ?? "") : `${s.error}: ${s.message ?? ""}`}`);
  const st = (body["runtime"] ?? body["status"]) as { containers?: { name: string; state: string; restartCount: number; exitCode: number; reason: string }[] } | undefined;
  for (const c of st?.containers ?? []) console.log(`  · ${c.name.padEnd(16)} ${c.state.padEnd(8)} restarts=${c.restartCount}${c.state === "exited" ? ` exit=${c.exitCode} ${c.reason}` : ""}`);
}

async function main(argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      out: { type: "string" },
      alg: { type: "string" },
      iss: { type: "string" },
      key: { type: "string" },
      aud: { type: "string" },
      act: { type: "string" },
      ttl: { type: "string" },
      url: { type: "string" },
      plan: { type: "boolean" },
      json: { type: "boolean" },
      output: { type: "string", short: "o" },
      container: { type: "string", short: "c" },
      follow: { type: "boolean", short: "f" },
      tail: { type: "string" },
      previous: { type: "boolean", short: "p" },
      timestamps: { type: "boolean" },
      since: { type: "string" },
      timeout: { type: "string" },
      generation: { type: "string" },
      detached: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  const o = values as Opts;
  const [cmd, arg] = positionals;
  if (o["help"] || !cmd) {
    console.log(USAGE);
    return;
  }
  const url = String(o["url"] ?? process.env["PODSYNC_URL"] ?? "http://127.0.0.1:8080").replace(/\/$/, "");
  const keyPath = String(o["key"] ?? process.env["PODSYNC_KEY"] ?? ".podsync/dev-key.json");
  const ttl = Number(o["ttl"] ?? 60);
  const iss = o["iss"] as string | undefined;

  switch (cmd) {
    case "keygen": {
      const alg = String(o["alg"] ?? "EdDSA") as SigningAlg;
      if (alg !== "EdDSA" && alg !== "ES256") fail("--alg must be EdDSA or ES256");
      const dir = String(o["out"] ?? ".");
      const { generateSigningKey } = await import("./auth/keys.js");
      const k = await generateSigningKey(alg);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "key.json"), JSON.stringify({ ...k.privateJwk, ...(iss ? { iss } : {}) }, null, 2) + "\n", { mode: 0o600 });
      writeFileSync(join(dir, "jwks.json"), JSON.stringify(k.jwks, null, 2) + "\n");
      console.log(`wrote ${join(dir, "key.json")} (private, kid ${k.privateJwk.kid}) and ${join(dir, "jwks.json")} (public: the node's PODSYNC_JWKS_FILE)`);
      return;
    }
    case "sign": {
      if (!arg) fail("sign needs a pod file");
      const aud = o["aud"] as string | undefined;
      if (!aud) fail("sign needs --aud NODE");
      const act = String(o["act"] ?? "sync");
      console.log(await signToken(loadKey(keyPath), { act, ...(await readPod(arg)) }, aud, ttl, iss));
      return;
    }
    case "sync":
    case "plan": {
      if (!arg) fail(`${cmd} needs a pod file`);
      const act = cmd === "plan" || o["plan"] ? "plan" : "sync";
      const aud = (o["aud"] as string | undefined) ?? (await nodeName(url));
      const token = await signToken(loadKey(keyPath), { act, ...(await readPod(arg)) }, aud, ttl, iss);
      const r = await fetch(`${url}/v1/pods/${act}`, { method: "POST", headers: { "content-type": "application/jose" }, body: token });
      const body = (await r.json()) as Record<string, unknown>;
      if (o["json"]) console.log(JSON.stringify(body, null, 2));
      else printResult(r.status, body);
      process.exitCode = r.ok && body["ok"] !== false ? 0 : 1;
      return;
    }
    case "apply": {
      if (!arg) fail("apply needs a file of pods (YAML documents, or a JSON v1.List)");
      const generation = Number(o["generation"]);
      if (o["generation"] === undefined || !Number.isSafeInteger(generation) || generation < 1) fail("apply needs --generation N, a whole number above the node's current generation (podsync pods shows it)");
      const aud = (o["aud"] as string | undefined) ?? (await nodeName(url));
      const bytes = arg === "-" ? readFileSync(0) : readFileSync(arg);
      const json = arg.endsWith(".json");
      let r: Response;
      if (o["detached"]) {
        // The file's bytes go as they are; the token signs their digest.
        const digest = Buffer.from(await crypto.subtle.digest("SHA-256", bytes)).toString("base64url");
        const token = await signToken(loadKey(keyPath), { act: "apply", generation, body_sha256: digest }, aud, ttl, iss);
        r = await fetch(`${url}/v1/node/pods`, { method: "PUT", headers: { "content-type": json ? "application/json" : "application/yaml", "podsync-signature": token }, body: bytes });
      } else {
        const token = await signToken(loadKey(keyPath), { act: "apply", generation, pods: await readPods(arg, bytes.toString("utf8"), json) }, aud, ttl, iss);
        r = await fetch(`${url}/v1/node/pods`, { method: "PUT", headers: { "content-type": "application/jose" }, body: token });
      }
      const body = (await r.json()) as Record<string, unknown>;
      if (o["json"]) console.log(JSON.stringify(body, null, 2));
      else if (!Array.isArray(body["pods"])) printResult(r.status, body);
      else {
        console.log(`generation ${body["generation"]}: ${body["ok"] ? "ok" : "NOT OK"} [HTTP ${r.status}]`);
        for (const p of body["pods"] as Record<string, unknown>[]) {
          printResult(r.status, p);
          if (p["error"]) printResult(Number((p["error"] as { status?: number }).status), p["error"] as Record<string, unknown>);
        }
        for (const p of body["removed"] as { ok: boolean; pod: { namespace: string; name: string; uid: string }; steps: Step[]; error?: Record<string, unknown> }[]) {
          console.log(`removed ${p.pod.namespace}/${p.pod.name} (${p.pod.uid}): ${p.ok ? "ok" : "NOT OK"}`);
          printResult(r.status, { steps: p.steps });
          if (p.error) printResult(Number(p.error["status"]), p.error);
        }
      }
      process.exitCode = r.ok && body["ok"] !== false ? 0 : 1;
      return;
    }
    case "pods": {
      const out = o["output"] as string | undefined;
      if (out !== undefined && out !== "json" && out !== "yaml" && out !== "wide") fail("-o must be json or yaml");
      const aud = (o["aud"] as string | undefined) ?? (await nodeName(url));
      const token = await signToken(loadKey(keyPath), { act: "status" }, aud, ttl, iss);
      const r = await fetch(`${url}/v1/pods`, { headers: { authorization: `Bearer ${token}` } });
      const body = (await r.json()) as { items: V1Pod[]; orphans: V1Pod[]; metadata: { resourceVersion: string } } & Record<string, unknown>;
      if (!r.ok) {
        printResult(r.status, body);
        process.exitCode = 1;
      } else if (out === "json") console.log(JSON.stringify(body, null, 2));
      else if (out === "yaml") process.stdout.write((await import("yaml")).stringify(body));
      else {
        const { podTable } = await import("./kubectl-print.js");
        const now = Date.now();
        console.log(body.items.length ? podTable(body.items, now, { namespace: true }) : "No desired pods.");
        console.log(`\ngeneration ${body.metadata.resourceVersion}`);
        if (body.orphans.length) console.log(`\norphans (made by podsync, not in this node's desired state; only DELETE removes them):\n${podTable(body.orphans, now, { namespace: true })}`);
      }
      return;
    }
    case "get": {
      if (!arg) fail("get needs a pod uid");
      const out = o["output"] as string | undefined;
      if (out !== undefined && out !== "json" && out !== "yaml" && out !== "wide") fail("-o must be json or yaml");
      const aud = (o["aud"] as string | undefined) ?? (await nodeName(url));
      const token = await signToken(loadKey(keyPath), { act: "status", uid: arg }, aud, ttl, iss);
      const r = await fetch(`${url}/v1/pods/${encodeURIComponent(arg)}`, { headers: { authorization: `Bearer ${token}` } });
      const body = (await r.json()) as Record<string, unknown>;
      if (!r.ok) {
        printResult(r.status, body);
        process.exitCode = 1;
      } else if (out === "json") console.log(JSON.stringify(body, null, 2));
      else if (out === "yaml") process.stdout.write((await import("yaml")).stringify(body));
      else console.log((await import("./kubectl-print.js")).podTable([body as unknown as V1Pod], Date.now()));
      return;
    }
    case "status":
    case "delete": {
      if (!arg) fail(`${cmd} needs a pod uid`);
      const aud = (o["aud"] as string | undefined) ?? (await nodeName(url));
      const token = await signToken(loadKey(keyPath), { act: cmd, uid: arg }, aud, ttl, iss);
      const r = await fetch(cmd === "status" ? `${url}/v1/pods/${encodeURIComponent(arg)}/status` : `${url}/v1/pods/${encodeURIComponent(arg)}`, {
        method: cmd === "status" ? "GET" : "DELETE",
        headers: { authorization: `Bearer ${token}` },
      });
      const body = (await r.json()) as Record<string, unknown>;
      if (o["json"]) console.log(JSON.stringify(body, null, 2));
      else printResult(r.status, body);
      process.exitCode = r.ok && body["ok"] !== false ? 0 : 1;
      return;
    }
    case "logs": {
      if (!arg) fail("logs needs a pod uid");
      const q = new URLSearchParams();
      if (o["container"]) q.set("container", String(o["container"]));
      if (o["follow"]) q.set("follow", "true");
      if (o["previous"]) q.set("previous", "true");
      if (o["timestamps"]) q.set("timestamps", "true");
      if (o["tail"] !== undefined) q.set("tailLines", String(o["tail"]));
      if (o["since"] !== undefined) q.set("sinceSeconds", String(sinceSeconds(String(o["since"]))));
      const aud = (o["aud"] as string | undefined) ?? (await nodeName(url));
      const token = await signToken(loadKey(keyPath), { act: "logs", uid: arg }, aud, ttl, iss);
      const r = await fetch(`${url}/v1/pods/${encodeURIComponent(arg)}/logs?${q}`, { headers: { authorization: `Bearer ${token}` } });
      if (!r.ok) {
        printResult(r.status, (await r.json()) as Record<string, unknown>);
        process.exitCode = 1;
        return;
      }
      // Streamed as it comes (follow), with the terminal's own backpressure.
      for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) if (!process.stdout.write(chunk)) await new Promise((res) => process.stdout.once("drain", res));
      return;
    }
    case "exec": {
      if (!arg) fail("exec needs a pod uid");
      const command = positionals.slice(2);
      if (command.length === 0) fail("exec needs a command after --, e.g. podsync exec UID -- ls /");
      const timeoutSeconds = o["timeout"] === undefined ? undefined : Number(o["timeout"]);
      if (timeoutSeconds !== undefined && !(Number.isInteger(timeoutSeconds) && timeoutSeconds > 0)) fail("--timeout must be a whole number of seconds");
      const aud = (o["aud"] as string | undefined) ?? (await nodeName(url));
      // The token binds this exact argv: it is the whole request.
      const claims = { act: "exec", uid: arg, command, ...(o["container"] ? { container: String(o["container"]) } : {}), ...(timeoutSeconds ? { timeoutSeconds } : {}) };
      const token = await signToken(loadKey(keyPath), claims, aud, ttl, iss);
      const r = await fetch(`${url}/v1/pods/${encodeURIComponent(arg)}/exec`, { method: "POST", headers: { "content-type": "application/jose" }, body: token });
      const body = (await r.json()) as Record<string, unknown>;
      if (!r.ok) {
        printResult(r.status, body);
        process.exitCode = 1;
        return;
      }
      type Out = { data: string; encoding: string; truncated: boolean; bytes: number };
      const write = (stream: NodeJS.WriteStream, out: Out, name: string) => {
        stream.write(out.encoding === "base64" ? Buffer.from(out.data, "base64") : out.data);
        if (out.truncated) console.error(`podsync: ${name} cut at ${Buffer.byteLength(out.data, out.encoding === "base64" ? "base64" : "utf8")} of ${out.bytes} bytes`);
      };
      write(process.stdout, body["stdout"] as Out, "stdout");
      write(process.stderr, body["stderr"] as Out, "stderr");
      process.exitCode = Number(body["exitCode"]);
      return;
    }
    case "volumes": {
      const aud = (o["aud"] as string | undefined) ?? (await nodeName(url));
      if (arg !== undefined && arg !== "rm") fail(`unknown volumes command "${arg}": use podsync volumes, or podsync volumes rm NAME`);
      const name = positionals[2];
      if (arg === "rm" && !name) fail("volumes rm needs a volume name");
      const token = await signToken(loadKey(keyPath), arg === "rm" ? { act: "delete", volume: name } : { act: "status" }, aud, ttl, iss);
      const r = await fetch(arg === "rm" ? `${url}/v1/node/volumes/${encodeURIComponent(name!)}` : `${url}/v1/node/volumes`, { method: arg === "rm" ? "DELETE" : "GET", headers: { authorization: `Bearer ${token}` } });
      const body = (await r.json()) as Record<string, unknown>;
      if (!r.ok) {
        printResult(r.status, body);
        process.exitCode = 1;
      } else if (o["json"]) console.log(JSON.stringify(body, null, 2));
      else if (arg === "rm") console.log(`removed volume ${name}`);
      else {
        const rows = (body["volumes"] as { name: string; path: string; usedBy: { namespace: string; name: string }[] }[]).map((v) => [v.name, v.usedBy.map((p) => `${p.namespace}/${p.name}`).join(",") || "<none>", v.path]);
        const w = [4, 7].map((min, i) => Math.max(min, ...rows.map((row) => row[i]!.length)));
        console.log([["NAME", "USED BY", "PATH"], ...rows].map((row) => `${row[0]!.padEnd(w[0]! + 3)}${row[1]!.padEnd(w[1]! + 3)}${row[2]}`).join("\n"));
      }
      return;
    }
    default:
      fail(`unknown command "${cmd}"\n${USAGE}`);
  }
}

/** kubectl's --since: a duration such as 30s, 5m, 2h (whole seconds). */
function sinceSeconds(v: string): number {
  const m = /^(\d+)(s|m|h)?$/.exec(v);
  if (!m) return fail("--since must be a duration such as 30s, 5m or 2h");
  return Math.max(1, Number(m[1]) * { s: 1, m: 60, h: 3600 }[(m[2] ?? "s") as "s"]);
}

main(process.argv.slice(2)).catch((e: unknown) => {
  console.error(`podsync: ${e instanceof Error ? e.message : String(e)}`);
  process.exitCode = 2;
});
