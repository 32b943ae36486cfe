// The node's side of the claim layout migration (volumemanager/claim-migration.ts decides): run once at start-up,
// before any pod syncs. Idempotent and crash-safe: the old tree is first renamed whole to volumes/pvc.v1 (one
// atomic rename), each claim is then renamed into pvc/<namespace>/<claim> (or pvc/.unassigned/<claim>), and the
// marker pvc/.layout is written last; a start that finds pvc.v1 goes on from where the last one stopped, one that
// finds the marker and no pvc.v1 does nothing. Every move is logged.
import { existsSync } from "node:fs";
import { mkdir, open, readdir, rename, rmdir, writeFile } from "node:fs/promises";
import { claimsDir } from "../../volumemanager/volumes.js";
import { planClaimMigration, type ClaimNamespaces } from "../../volumemanager/claim-migration.js";

export const LAYOUT_MARKER = ".layout";
export const UNASSIGNED = ".unassigned";

async function syncDir(path: string): Promise<void> {
  const d = await open(path, "r");
  await d.sync().finally(() => d.close());
}

/** Migrates `<rootDir>/volumes/pvc` to the namespaced layout; `known` is read only when there is something to move. */
export async function migrateClaimLayout(
  rootDir: string,
  known: () => Promise<ClaimNamespaces>,
  log: (line: string) => void,
): Promise<void> {
  const pvc = claimsDir(rootDir);
  const old = `${pvc}.v1`;
  const marker = `${pvc}/${LAYOUT_MARKER}`;
  if (!existsSync(old)) {
    if (existsSync(marker)) return;
    if (existsSync(pvc)) {
      await rename(pvc, old);
      await syncDir(`${rootDir}/volumes`);
    }
  }
  await mkdir(pvc, { recursive: true, mode: 0o755 });
  if (existsSync(old)) {
    const dirs = (await readdir(old, { withFileTypes: true }))
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
    const plan = planClaimMigration(dirs, dirs.length ? await known() : { pods: [], statefulSets: [], claims: [] });
    for (const m of plan) {
      const dest = "namespace" in m ? `${pvc}/${m.namespace}` : `${pvc}/${UNASSIGNED}`;
      await mkdir(dest, { recursive: true, mode: 0o755 });
      if (existsSync(`${dest}/${m.claim}`)) {
        log(`claims: ${old}/${m.claim} left in place: ${dest}/${m.claim} exists already`);
        continue;
      }
      await rename(`${old}/${m.claim}`, `${dest}/${m.claim}`);
      log(
        "namespace" in m
          ? `claims: moved volume ${m.claim} to namespace ${m.namespace} (${dest}/${m.claim})`
          : `claims: volume ${m.claim} not placed, ${m.unplaced}: moved to ${dest}/${m.claim} for the node owner`,
      );
    }
    await syncDir(pvc);
    // What is left (a file, or a claim whose destination existed) stays in pvc.v1 for the owner to look at.
    if ((await readdir(old)).length === 0) await rmdir(old);
    else log(`claims: ${old} kept: it still holds entries that were not moved`);
  }
  await writeFile(marker, "namespaced\n", { mode: 0o644 });
  await syncDir(pvc);
}
