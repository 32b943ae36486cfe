// podsync get: kubectl get over the node's objects. `get [TYPE] [NAME...]`; TYPE is pods when left out (so the
// old `get UID` still works), and TYPE/NAME names one object.
import { usage } from "../args.js";
import { notFound } from "../output.js";
import type { Ctx } from "../client.js";
import type { Command } from "../command.js";
import { OUTPUT_HELP, parseFormat, render, rowLine, type PrintOptions } from "../print/format.js";
import { parseSelector } from "../selector.js";
import { findResource, resourceNames } from "../resources/index.js";
import type { KubeObject, Resource } from "../resources/resource.js";
import { watchEvents, WatchUnavailable } from "../watch.js";
import { isMultiType, runGetMany } from "../workloads/multi-get.js";

export const listOptions = {
  "all-namespaces": { type: "boolean", short: "A", help: "every namespace (adds a NAMESPACE column)" },
  selector: { type: "string", short: "l", help: "only objects whose labels match, e.g. -l app=web,tier!=db" },
  output: { type: "string", short: "o", help: OUTPUT_HELP },
  watch: { type: "boolean", short: "w", help: "after the list, print each change as it happens (Ctrl-C stops)" },
  "no-headers": { type: "boolean", help: "no header line in tables" },
} as const;

const get: Command = {
  usage: [
    "get [TYPE] [NAME...] [-n NS | -A] [-l SELECTOR] [-o wide|name|json|yaml|jsonpath=T] [-w] [--no-headers]",
    "get TYPE,TYPE... | all [-n NS | -A] [-l SELECTOR] [-o wide|name|json|yaml] [--no-headers]",
  ],
  help: `Print the node's objects as kubectl get does. TYPE is one of: ${resourceNames().join(", ")} (default pods); a pod is\nnamed by its name (in -n's namespace, default "default") or by its uid.`,
  examples: [
    "podsync get pods",
    "podsync get web -o wide",
    "podsync get pod/web -o jsonpath='{.status.phase}'",
    "podsync get pods -A -l app=web --no-headers",
    "podsync get pods -w",
    "podsync get deploy,rs",
    "podsync get all",
  ],
  options: listOptions,
  run: (ctx) => runGet(ctx, ctx.args),
};
export default get;

/** kubectl get: the type and names from `args`, the flags from ctx. */
export async function runGet(ctx: Ctx, args: string[], defaults: { allNamespaces?: boolean } = {}): Promise<void> {
  if (isMultiType(args[0])) return runGetMany(ctx, args[0] ?? "", args.slice(1));
  const q = await parseQuery(ctx, args, defaults);
  const { objs, missing, all } = await pick(ctx, q, true);
  const text = await render(objs, q.format, await printOptions(ctx, q));
  if (text) process.stdout.write(`${text}\n`);
  const plural = `${q.resource.kind.toLowerCase()}s`;
  for (const n of missing)
    process.stderr.write(
      `podsync: ${notFound(
        plural,
        n,
        ctx.namespace,
        all.filter((x) => x.metadata.name === n).map((x) => x.metadata.namespace ?? ""),
      )}\n`,
    );
  if (missing.length) process.exitCode = 1;
  if (!objs.length && !q.names.length && q.format.kind !== "json" && q.format.kind !== "yaml")
    process.stderr.write(`No resources found${q.allNamespaces ? "" : ` in ${ctx.namespace} namespace`}.\n`);
  if (ctx.o["watch"]) await watch(ctx, q, objs);
}

/** What a get asks for: the type, the names, the scope, the format and the selector. */
interface Query {
  resource: Resource;
  names: string[];
  allNamespaces: boolean;
  format: ReturnType<typeof parseFormat>;
  selector: ReturnType<typeof parseSelector> | undefined;
}

async function parseQuery(ctx: Ctx, args: string[], defaults: { allNamespaces?: boolean }): Promise<Query> {
  const o = ctx.o;
  let resource: Resource | undefined;
  let names = args;
  const first = args[0];
  if (first !== undefined && !first.includes("/")) {
    resource = await findResource(first);
    if (resource) names = args.slice(1);
  }
  const typed = names.filter((n) => n.includes("/"));
  if (typed.length) {
    const types = new Set(typed.map((n) => n.split("/")[0]!.toLowerCase()));
    if (types.size > 1 || resource) usage(`name one type: ${[...types].join(", ")}`, ctx.command);
    resource = await findResource([...types][0]!);
    if (!resource) usage(`unknown type "${[...types][0]}" (known: ${resourceNames().join(", ")})`, ctx.command);
    if (typed.length !== names.length) usage("give every name as TYPE/NAME, or none", ctx.command);
    names = names.map((n) => n.slice(n.indexOf("/") + 1));
  }
  resource ??= (await findResource("pods"))!;
  const explicitNs = o["namespace"] !== undefined;
  const allNamespaces = Boolean(o["all-namespaces"]) || (Boolean(defaults.allNamespaces) && !explicitNs);
  if (o["all-namespaces"] && names.length)
    usage("a name is looked up in one namespace: use -n NS, not -A", ctx.command);
  const format = parseFormat(o["output"] as string | undefined, ctx.command);
  const selector = o["selector"] !== undefined ? parseSelector(String(o["selector"])) : undefined;
  return { resource, names, allNamespaces, format, selector };
}

const printOptions = async (ctx: Ctx, q: Query): Promise<PrintOptions> => ({
  resource: q.resource,
  single: q.names.length === 1,
  allNamespaces: q.allNamespaces,
  headers: !ctx.o["no-headers"],
  now: Date.now(),
  node: q.format.kind === "table" && q.format.wide ? await ctx.aud() : "",
});

/** The namespace, name and label filters, for each watched object. */
function inScope(ctx: Ctx, q: Query, x: KubeObject): boolean {
  if (q.names.length) {
    if (!q.names.some((n) => (x.metadata.namespace === ctx.namespace && x.metadata.name === n) || x.metadata.uid === n))
      return false;
  } else if (!q.allNamespaces && (x.metadata.namespace ?? "default") !== ctx.namespace) return false;
  return !q.selector || q.selector(x.metadata.labels);
}

/** The list, filtered as the query says; the names not found. */
async function pick(
  ctx: Ctx,
  q: Query,
  first: boolean,
): Promise<{ objs: KubeObject[]; missing: string[]; all: KubeObject[] }> {
  const listed = await q.resource.list(ctx);
  // Notes (orphans) go to stderr, for a table of the whole list only.
  if (first && !q.names.length && q.format.kind === "table") for (const n of listed.notes ?? []) ctx.note(n);
  const all = listed.items;
  let objs = all;
  const missing: string[] = [];
  if (q.names.length) {
    const found: KubeObject[] = [];
    for (const n of q.names) {
      const x =
        objs.find((x) => x.metadata.namespace === ctx.namespace && x.metadata.name === n) ??
        objs.find((x) => x.metadata.uid === n);
      if (x) found.push(x);
      else missing.push(n);
    }
    objs = found;
  } else if (!q.allNamespaces) objs = objs.filter((x) => (x.metadata.namespace ?? "default") === ctx.namespace);
  if (q.selector) objs = objs.filter((x) => q.selector!(x.metadata.labels));
  return { objs, missing, all };
}

/** --watch: print each object whose row (or, for -o json|yaml|name, whose object) changed, and once more, as
 * last seen, each one that went away, as kubectl -w prints each event. The node's watch (the Kubernetes API,
 * fed by the loop's relist) where it serves one for the type; else the list, polled every second. */
async function watch(ctx: Ctx, q: Query, objs: KubeObject[]): Promise<void> {
  const { format } = q;
  const key = async (x: KubeObject) =>
    format.kind === "table"
      ? rowLine(x, format.wide, await printOptions(ctx, q))
      : JSON.stringify({ ...x, metadata: { ...x.metadata, resourceVersion: undefined } });
  // Ages tick every second: rows are compared without ages (and RESTARTS' "(5s ago)").
  const stable = (s: string | undefined) => s?.replace(/\b\d+[smhdy](\d+[smh])?\b/g, "");
  const idOf = (x: KubeObject) => x.metadata.uid ?? `${x.metadata.namespace}/${x.metadata.name}`;
  const seen = new Map<string, { key: string; obj: KubeObject }>();
  for (const x of objs) seen.set(idOf(x), { key: await key(x), obj: x });
  const print = async (x: KubeObject) =>
    process.stdout.write(
      `${await render([x], format, { ...(await printOptions(ctx, q)), headers: false, single: true })}\n`,
    );
  const changed = async (x: KubeObject) => {
    const k = await key(x);
    if (stable(seen.get(idOf(x))?.key) === stable(k)) return;
    seen.set(idOf(x), { key: k, obj: x });
    await print(x);
  };
  const gone = async (id: string) => {
    const last = seen.get(id);
    if (!last) return;
    seen.delete(id);
    await print(last.obj);
  };
  if (q.resource.watchPath) {
    try {
      await watchEvents(ctx, q.resource.watchPath, async (e) => {
        if (!inScope(ctx, q, e.object)) return;
        if (e.type === "DELETED") await gone(idOf(e.object));
        else await changed(e.object);
      });
      return;
    } catch (e) {
      if (!(e instanceof WatchUnavailable)) throw e;
    }
  }
  for (;;) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = await pick(ctx, q, false);
    const ids = new Set<string>();
    for (const x of now.objs) {
      ids.add(idOf(x));
      await changed(x);
    }
    for (const id of [...seen.keys()]) if (!ids.has(id)) await gone(id);
  }
}
