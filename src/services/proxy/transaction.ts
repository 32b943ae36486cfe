// nft scripts (`nft -f -`, one atomic transaction each) that take the kernel's table from what it holds to the
// desired ruleset. Pure. A full sync (start-up, after any failure) rewrites every chain and map, as kube-proxy's
// needFullSync does, and removes what podsync no longer wants; an incremental one touches only what changed, so one
// endpoint change is its endpoint chain, its service chain's rule and nothing else (kube-proxy's partial sync).
import type { NftChain, NftElement, NftRuleset, NftSet } from "./ruleset.js";
import { isAffinitySetName, isServiceChainName } from "./names.js";

/** What `nft -j list table` says the table holds (names only): the full sync's diff base. */
export interface KernelTable {
  chains: string[];
  sets: string[];
}

const q = (s: string) => `"${s.replaceAll('"', "")}"`;

function chainDecl(t: string, c: NftChain): string {
  const parts: string[] = [];
  if (c.base) parts.push(`type ${c.base.type} hook ${c.base.hook} priority ${c.base.priority} ;`);
  if (c.comment) parts.push(`comment ${q(c.comment)} ;`);
  return `add chain inet ${t} ${c.name}${parts.length ? ` { ${parts.join(" ")} }` : ""}`;
}
function setDecl(t: string, s: NftSet): string {
  const parts = [`type ${s.type} ;`];
  if (s.flags?.length) parts.push(`flags ${s.flags.join(",")} ;`);
  if (s.timeoutSeconds) parts.push(`timeout ${s.timeoutSeconds}s ;`);
  if (s.comment) parts.push(`comment ${q(s.comment)} ;`);
  return `add ${s.kind} inet ${t} ${s.name} { ${parts.join(" ")} }`;
}
const elementText = (key: string, e: NftElement) =>
  `${key}${e.comment ? ` comment ${q(e.comment)}` : ""}${e.value ? ` : ${e.value}` : ""}`;
const addElement = (t: string, s: NftSet, key: string, e: NftElement) =>
  `add element inet ${t} ${s.name} { ${elementText(key, e)} }`;
const deleteElement = (t: string, s: NftSet, key: string) => `delete element inet ${t} ${s.name} { ${key} }`;
const rules = (t: string, c: NftChain) => c.rules.map((r) => `add rule inet ${t} ${c.name} ${r}`);

/** The whole table, as `nft -f` input: what tests compare with upstream's expected rules. */
export function renderRuleset(rs: NftRuleset): string[] {
  const t = rs.table;
  const out = [`add table inet ${t} { comment "rules for podsync" ; }`];
  for (const s of rs.sets.values()) out.push(setDecl(t, s));
  for (const c of rs.chains.values()) out.push(chainDecl(t, c));
  for (const c of rs.chains.values()) out.push(...rules(t, c));
  for (const s of rs.sets.values()) for (const [k, e] of s.elements ?? []) out.push(addElement(t, s, k, e));
  return out;
}

/** From whatever the kernel holds to `want`. `recreateBase`: delete and add the base chains, so a changed hook or
 * priority takes (kube-proxy does this once per process). Affinity sets the kernel has are kept with their entries. */
export function fullSyncScript(want: NftRuleset, have: KernelTable | undefined, recreateBase = true): string[] {
  const t = want.table;
  const out = [`add table inet ${t} { comment "rules for podsync" ; }`];
  if (recreateBase && have)
    for (const c of want.chains.values())
      if (c.base && have.chains.includes(c.name)) out.push(`delete chain inet ${t} ${c.name}`);
  for (const s of want.sets.values()) {
    out.push(setDecl(t, s));
    if (s.elements) out.push(`flush ${s.kind} inet ${t} ${s.name}`);
  }
  for (const c of want.chains.values()) out.push(chainDecl(t, c), `flush chain inet ${t} ${c.name}`);
  for (const c of want.chains.values()) out.push(...rules(t, c));
  for (const s of want.sets.values()) for (const [k, e] of s.elements ?? []) out.push(addElement(t, s, k, e));
  // Whatever else the table holds was podsync's: the rules that referred to it are gone above, so flush, then delete.
  const staleChains = (have?.chains ?? []).filter((c) => !want.chains.has(c));
  for (const c of staleChains) out.push(`flush chain inet ${t} ${c}`);
  for (const c of staleChains) out.push(`delete chain inet ${t} ${c}`);
  for (const s of have?.sets ?? []) if (!want.sets.has(s)) out.push(`delete ${kindOf(s)} inet ${t} ${s}`);
  return out;
}
// The fixed maps are maps; every other set podsync makes (cluster-ips, affinity-*) is a set.
const MAPS = new Set(["no-endpoint-nodeports", "no-endpoint-services", "service-ips", "service-nodeports"]);
const kindOf = (name: string) => (MAPS.has(name) ? "map" : "set");

const sameChain = (a: NftChain, b: NftChain) =>
  JSON.stringify([a.base, a.comment, a.rules]) === JSON.stringify([b.base, b.comment, b.rules]);
const sameSet = (a: NftSet, b: NftSet) =>
  JSON.stringify([a.kind, a.type, a.flags, a.timeoutSeconds, a.comment]) ===
  JSON.stringify([b.kind, b.type, b.flags, b.timeoutSeconds, b.comment]);

/** From `have` (what the last transaction left) to `want`: only the changed chains, sets and elements; undefined when
 * a change cannot be made in place (a base chain or a set's type changed): then a full sync. Empty: nothing to do. */
export function incrementalScript(have: NftRuleset, want: NftRuleset): string[] | undefined {
  const t = want.table;
  const addSets: string[] = [];
  const addChains: string[] = [];
  const fill: string[] = [];
  const delElements: string[] = [];
  const addElements: string[] = [];
  const staleChains: string[] = [];
  const staleSets: string[] = [];
  for (const s of want.sets.values()) {
    const old = have.sets.get(s.name);
    if (old && !sameSet(old, s)) return undefined;
    if (!old) addSets.push(setDecl(t, s));
    if (!s.elements) continue;
    const before = old?.elements ?? new Map<string, NftElement>();
    for (const [k, e] of before) {
      const now = s.elements.get(k);
      if (!now || now.value !== e.value || now.comment !== e.comment) delElements.push(deleteElement(t, s, k));
    }
    for (const [k, e] of s.elements) {
      const was = before.get(k);
      if (!was || was.value !== e.value || was.comment !== e.comment) addElements.push(addElement(t, s, k, e));
    }
  }
  for (const s of have.sets.values())
    if (!want.sets.has(s.name)) staleSets.push(`delete ${s.kind} inet ${t} ${s.name}`);
  for (const c of want.chains.values()) {
    const old = have.chains.get(c.name);
    if (old && JSON.stringify(old.base) !== JSON.stringify(c.base)) return undefined;
    if (old && sameChain(old, c)) continue;
    if (!old) addChains.push(chainDecl(t, c));
    else fill.push(`flush chain inet ${t} ${c.name}`);
    fill.push(...rules(t, c));
  }
  for (const c of have.chains.values())
    if (!want.chains.has(c.name)) {
      if (c.base || !isServiceChainName(c.name)) return undefined;
      staleChains.push(c.name);
    }
  for (const s of staleSets) if (!isAffinitySetName(s.split(" ").pop()!)) return undefined;
  return [
    ...addSets,
    ...addChains,
    ...fill,
    ...delElements,
    ...addElements,
    ...staleChains.map((c) => `flush chain inet ${t} ${c}`),
    ...staleChains.map((c) => `delete chain inet ${t} ${c}`),
    ...staleSets,
  ];
}
