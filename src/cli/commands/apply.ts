// podsync apply: make a file's pods the node's whole desired set (PUT /v1/node/pods).
import { readFileSync } from "node:fs";
import { fail } from "../args.js";
import type { Command } from "../command.js";
import { printResult, printWarnings, type Step } from "../output.js";
import { readPods } from "../pod-files.js";

const apply: Command = {
  usage: ["apply [-f] NODE.(yaml|json) --generation N [--detached] [--json]"],
  help: "Make the file's pods and workloads (YAML documents, or a v1.List) the node's whole desired set: PUT\n/v1/node/pods. Pods and workloads the node held that the file leaves out are deleted (claims stay).",
  examples: ["podsync apply node.yaml --generation 2", "podsync apply -f node.yaml --generation 3"],
  options: { generation: { type: "string" }, detached: { type: "boolean" }, json: { type: "boolean" }, filename: { type: "string", short: "f" } },
  async run(ctx) {
    const file = (ctx.o["filename"] as string | undefined) ?? ctx.args[0];
    if (!file) fail("apply needs a file of pods (YAML documents, or a JSON v1.List)");
    const generation = Number(ctx.o["generation"]);
    if (ctx.o["generation"] === undefined || !Number.isSafeInteger(generation) || generation < 1) fail("apply needs --generation N, a whole number above the node's current generation (podsync pods shows it)");
    const bytes = file === "-" ? readFileSync(0) : readFileSync(file);
    const json = file.endsWith(".json");
    let r: Response;
    if (ctx.o["detached"]) {
      // The file's bytes go as they are; the token signs their digest.
      const digest = Buffer.from(await crypto.subtle.digest("SHA-256", bytes)).toString("base64url");
      const token = await ctx.sign({ act: "apply", generation, body_sha256: digest });
      r = await fetch(`${ctx.url}/v1/node/pods`, { method: "PUT", headers: { "content-type": json ? "application/json" : "application/yaml", "podsync-signature": token }, body: bytes });
    } else {
      const token = await ctx.sign({ act: "apply", generation, pods: await readPods(file, bytes.toString("utf8"), json) });
      r = await fetch(`${ctx.url}/v1/node/pods`, { method: "PUT", headers: { "content-type": "application/jose" }, body: token });
    }
    const body = (await r.json()) as Record<string, unknown>;
    if (ctx.o["json"]) console.log(JSON.stringify(body, null, 2));
    else if (!Array.isArray(body["pods"])) printResult(r.status, body);
    else {
      printWarnings(body);
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
  },
};
export default apply;
