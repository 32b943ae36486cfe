// persistentVolumeClaims as node-local named volumes, the way `podman kube play` treats them: a claim is a
// directory <rootDir>/volumes/pvc/<namespace>/<claimName> (claims are namespaced objects), made on first use and kept when the pods using it go (there
// is no provisioner and no PersistentVolume: the claim is the node's own). Listing reads the directories and
// which pods' containers the runtime holds with the claim mounted; removal is refused while any does, or
// while a desired pod names it.
import type { CriClient } from "../cri/client.js";
import type { Pod } from "../pod/schema.js";
import {
  CONTAINER_CLAIMS_ANNOTATION,
  KUBERNETES_MANAGED_LABEL,
  MANAGED_BY,
  POD_NAME_LABEL,
  POD_NAMESPACE_LABEL,
  POD_UID_LABEL,
} from "../container/labels.js";
import type { PodRef } from "../container/types.js";
import { claimPath, claimsDir, podClaims, type VolumeHost } from "./volumes.js";

export interface ClaimInfo {
  namespace: string;
  name: string;
  path: string;
  /** Pods whose containers (in any state) the runtime holds with this claim mounted, and desired pods naming it. */
  usedBy: PodRef[];
}

const claimKey = (namespace: string, name: string) => `${namespace}/${name}`;

/** namespace/claim → the pods using it, from the runtime's containers and the desired pods. */
async function users(cri: CriClient, desired: readonly Pod[]): Promise<Map<string, PodRef[]>> {
  const out = new Map<string, Map<string, PodRef>>();
  const add = (claim: string, ref: PodRef) => {
    if (!out.has(claim)) out.set(claim, new Map());
    out.get(claim)!.set(ref.uid, ref);
  };
  const { containers } = await cri.listContainers({
    filter: { labelSelector: { [KUBERNETES_MANAGED_LABEL]: MANAGED_BY } },
  });
  for (const c of containers) {
    const claims = c.annotations[CONTAINER_CLAIMS_ANNOTATION];
    if (!claims) continue;
    const ref = {
      uid: c.labels[POD_UID_LABEL] ?? "",
      name: c.labels[POD_NAME_LABEL] ?? "",
      namespace: c.labels[POD_NAMESPACE_LABEL] ?? "",
    };
    for (const claim of claims.split(",")) add(claimKey(ref.namespace, claim), ref);
  }
  for (const p of desired)
    for (const claim of podClaims(p))
      add(claimKey(p.metadata.namespace, claim), {
        uid: p.metadata.uid,
        name: p.metadata.name,
        namespace: p.metadata.namespace,
      });
  return new Map([...out].map(([k, v]) => [k, [...v.values()]]));
}

/** The claims' directories on the node, by namespace and name (no runtime call). */
export async function listClaimDirs(
  host: Pick<VolumeHost, "listDirs">,
  rootDir: string,
): Promise<{ namespace: string; name: string }[]> {
  const root = claimsDir(rootDir);
  // Dot-directories are podsync's own (.unassigned: claims the layout migration could not place).
  const namespaces = (await host.listDirs(root)).filter((n) => !n.startsWith("."));
  const names = await Promise.all(
    namespaces.map(async (namespace) =>
      (await host.listDirs(`${root}/${namespace}`)).map((name) => ({ namespace, name })),
    ),
  );
  return names.flat();
}

export async function listClaims(
  cri: CriClient,
  host: VolumeHost,
  rootDir: string,
  desired: readonly Pod[] = [],
): Promise<ClaimInfo[]> {
  const [names, used] = await Promise.all([listClaimDirs(host, rootDir), users(cri, desired)]);
  return names.map(({ namespace: ns, name }) => ({
    namespace: ns,
    name,
    path: claimPath(rootDir, ns, name),
    usedBy: used.get(claimKey(ns, name)) ?? [],
  }));
}

export class ClaimNotFoundError extends Error {}
export class ClaimInUseError extends Error {
  constructor(
    readonly claim: string,
    readonly usedBy: PodRef[],
  ) {
    super(
      `volume ${JSON.stringify(claim)} is used by ${usedBy.map((p) => `pod ${p.namespace}/${p.name} (${p.uid})`).join(", ")}: delete those pods first`,
    );
  }
}

/** Remove a claim's directory and its data; refused while a pod uses it. */
export async function removeClaim(
  cri: CriClient,
  host: VolumeHost,
  rootDir: string,
  namespace: string,
  name: string,
  desired: readonly Pod[] = [],
): Promise<void> {
  const claims = await listClaims(cri, host, rootDir, desired);
  const claim = claims.find((c) => c.namespace === namespace && c.name === name);
  if (!claim)
    throw new ClaimNotFoundError(
      `no volume ${JSON.stringify(name)} in namespace ${JSON.stringify(namespace)} on this node`,
    );
  if (claim.usedBy.length) throw new ClaimInUseError(`${namespace}/${name}`, claim.usedBy);
  await host.removeDir(claim.path);
}
