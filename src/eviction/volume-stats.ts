// kubelet's fsResourceAnalyzer (pkg/kubelet/server/stats/fs_resource_analyzer.go, volume_stat_calculator.go):
// a pod's volume use is not measured on every eviction pass but cached per pod and measured again once every
// --volume-stats-agg-period (default 1 minute), each pod on its own jittered period (wait.JitterUntil with
// jitter factor 1.0: between one and two periods). Walking a volume is the expensive part of a stats pass; its
// logs and hosts file, which kubelet's host stats provider measures on every summary, stay measured each pass.
// podsync's one difference: kubelet's calculators run in the background and a pod has no volume stats until
// its first one has run (up to one period after the pod appears); here the pass measures a pod that has none
// at once, and one whose period has run out, and reads the cache otherwise.

/** kubelet's --volume-stats-agg-period default. */
export const VOLUME_STATS_AGG_PERIOD_DEFAULT_MS = 60_000;

export interface VolumeStatsCache {
  /** The pod's cached volume use, measured again (by `measure`) when it has none or its period has run out. */
  get(
    uid: string,
    now: number,
    measure: () => Promise<ReadonlyMap<string, number>>,
  ): Promise<ReadonlyMap<string, number>>;
  /** Drops every entry but these pods' (updateCachedPodVolumeStats stops the calculators of deleted pods; here
   * also of evicted ones, so a pod made anew after its eviction is measured afresh). */
  keepOnly(uids: ReadonlySet<string>): void;
}

export function createVolumeStatsCache(
  periodMs = VOLUME_STATS_AGG_PERIOD_DEFAULT_MS,
  random: () => number = Math.random,
): VolumeStatsCache {
  const entries = new Map<string, { volumes: ReadonlyMap<string, number>; nextAt: number }>();
  return {
    async get(uid, now, measure) {
      const e = entries.get(uid);
      if (e && now < e.nextAt) return e.volumes;
      const volumes = await measure();
      entries.set(uid, { volumes, nextAt: now + periodMs * (1 + random()) });
      return volumes;
    },
    keepOnly(uids) {
      for (const uid of entries.keys()) if (!uids.has(uid)) entries.delete(uid);
    },
  };
}
