// `podsync get deploy,rs` and `get all`: several types at once, as kubectl prints them (get.go with more than one
// resource type): each type its own table, separated by a blank line, names prefixed `TYPE/NAME` (with the API
// group: `deployment.apps/web`); `all` skips the empty types (kubectl's `all` category: pods, services,
// deployments, replicasets, statefulsets, daemonsets, jobs, cronjobs; here the types the CLI knows).
import { usage } from "../args.js";
import type { Ctx } from "../client.js";
import { parseFormat, render } from "../print/format.js";
import { findResource, workloadKindNamed } from "../resources/index.js";
import type { KubeObject, Resource } from "../resources/resource.js";
import { parseSelector } from "../selector.js";
import { qualifiedKind } from "./ref.js";

/** kubectl's `all` category, in its order. */
const ALL = ["pods", "services", "deployments", "replicasets", "statefulsets", "daemonsets", "jobs", "cronjobs"];

/** `get` names several types (a comma) or the `all` category. */
export const isMultiType = (arg: string | undefined): boolean =>
  arg !== undefined && !arg.includes("/") && (arg.includes(",") || arg.toLowerCase() === "all");

/** The prefix kubectl prints for a type: `pod`, `service`, `deployment.apps`, `job.batch`. */
function prefixOf(r: Resource): string {
  const kind = workloadKindNamed(r.kind);
  return kind ? qualifiedKind(kind) : r.kind.toLowerCase();
}

export async function runGetMany(ctx: Ctx, typesArg: string, names: string[]): Promise<void> {
  const o = ctx.o;
  const all = typesArg.toLowerCase() === "all";
  if (names.length) usage(`name objects one type at a time (get TYPE NAME), not with ${typesArg}`, ctx.command);
  if (o["watch"]) usage("--watch takes one type, not several", ctx.command);
  const resources: Resource[] = [];
  for (const t of all ? ALL : typesArg.split(",").filter(Boolean)) {
    const r = await findResource(t);
    if (r) resources.push(r);
    else if (!all) usage(`the server doesn't have a resource type "${t}"`, ctx.command);
  }
  const format = parseFormat(o["output"] as string | undefined, ctx.command);
  const selector = o["selector"] !== undefined ? parseSelector(String(o["selector"])) : undefined;
  const allNamespaces = Boolean(o["all-namespaces"]);
  const node = format.kind === "table" && format.wide ? await ctx.aud() : "";
  const now = Date.now();
  const found: { r: Resource; objs: KubeObject[] }[] = [];
  for (const r of resources) {
    const objs = (await r.list(ctx)).items.filter(
      (x) =>
        (allNamespaces || (x.metadata.namespace ?? "default") === ctx.namespace) &&
        (!selector || selector(x.metadata.labels)),
    );
    if (objs.length || !all) found.push({ r, objs });
  }
  const every = found.flatMap((f) => f.objs.map((x) => ({ ...x, kind: x.kind ?? f.r.kind })));
  const opts = (r: Resource) => ({ resource: r, single: false, allNamespaces, headers: !o["no-headers"], now, node });
  let text: string;
  if (format.kind === "table") {
    const tables: string[] = [];
    for (const { r, objs } of found) {
      // The NAME column as kubectl prints it for several types: TYPE/NAME.
      const named = objs.map((x) => ({ ...x, metadata: { ...x.metadata, name: `${prefixOf(r)}/${x.metadata.name}` } }));
      const t = await render(named, format, opts(r));
      if (t) tables.push(t);
    }
    text = tables.join("\n\n");
  } else if (format.kind === "name")
    text = found.flatMap(({ r, objs }) => objs.map((x) => `${prefixOf(r)}/${x.metadata.name}`)).join("\n");
  else text = await render(every, format, opts(resources[0]!));
  if (text) process.stdout.write(`${text}\n`);
  if (!every.length && format.kind !== "json" && format.kind !== "yaml")
    process.stderr.write(`No resources found${allNamespaces ? "" : ` in ${ctx.namespace} namespace`}.\n`);
}
