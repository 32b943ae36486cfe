// The claim layout's one migration: claims were <root>/volumes/pvc/<claim>, shared by every namespace that named
// the claim (ns-a/db's and ns-b/db's data-db-0 were one directory); they are <root>/volumes/pvc/<namespace>/<claim>.
// This is the decision (pure): which namespace each old directory belongs to, from what the node stores: the
// desired pods naming it, the StatefulSets whose claim templates make it (<template>-<set>-<ordinal>, the
// StatefulSet controller's getPersistentVolumeClaimName) and the claims (PersistentVolumeClaim objects) sent to
// the node. A directory that none of them names, or that several namespaces name (the very sharing this fixes:
// whose data it is cannot be known), is not given to anyone: it is left for the node owner under .unassigned/.

export interface ClaimNamespaces {
  /** Desired pods: their namespace and the claims they name. */
  pods: { namespace: string; claims: string[] }[];
  /** Stored StatefulSets: namespace, name and the names of their claim templates. */
  statefulSets: { namespace: string; name: string; templates: string[] }[];
  /** Stored PersistentVolumeClaim objects. */
  claims: { namespace: string; name: string }[];
}

export type ClaimMove = { claim: string; namespace: string } | { claim: string; unplaced: string };

export function planClaimMigration(dirs: readonly string[], known: ClaimNamespaces): ClaimMove[] {
  const owners = new Map<string, Set<string>>();
  const own = (claim: string, ns: string) => {
    if (!owners.has(claim)) owners.set(claim, new Set());
    owners.get(claim)!.add(ns);
  };
  for (const p of known.pods) for (const c of p.claims) own(c, p.namespace);
  for (const c of known.claims) own(c.name, c.namespace);
  for (const dir of dirs)
    for (const s of known.statefulSets)
      for (const t of s.templates) {
        const prefix = `${t}-${s.name}-`;
        if (dir.startsWith(prefix) && /^(0|[1-9][0-9]*)$/.test(dir.slice(prefix.length))) own(dir, s.namespace);
      }
  return dirs.map((claim) => {
    const ns = [...(owners.get(claim) ?? [])].sort();
    if (ns.length === 1) return { claim, namespace: ns[0]! };
    return {
      claim,
      unplaced: ns.length
        ? `named in several namespaces (${ns.join(", ")}): whose data it holds cannot be known`
        : "no stored pod, StatefulSet or claim names it",
    };
  });
}
