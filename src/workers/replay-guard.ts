// Durable Object ReplayGuard. Guarantees: a jti is fresh exactly once until its expiry; expired entries are
// swept by an alarm set at the earliest expiry, so storage holds only live claims.
import type { DOState } from "./durable-object.js";

/** Durable Object: atomic jti claims for one node, expired entries swept by an alarm. */
export class ReplayGuard {
  constructor(private readonly state: DOState) {}
  async fetch(req: Request): Promise<Response> {
    const { key, expiresAtMs } = (await req.json()) as { key: string; expiresAtMs: number };
    const now = Date.now();
    const until = await this.state.storage.get<number>(key);
    if (until !== undefined && until > now) return Response.json({ fresh: false });
    await this.state.storage.put(key, expiresAtMs);
    const alarm = await this.state.storage.getAlarm();
    if (alarm === null || alarm > expiresAtMs) await this.state.storage.setAlarm(expiresAtMs);
    return Response.json({ fresh: true });
  }
  async alarm(): Promise<void> {
    const now = Date.now();
    const all = await this.state.storage.list<number>();
    const dead = [...all].filter(([, until]) => until <= now).map(([k]) => k);
    for (let i = 0; i < dead.length; i += 128) await this.state.storage.delete(dead.slice(i, i + 128));
    const next = Math.min(...[...all.values()].filter((u) => u > now));
    if (Number.isFinite(next)) await this.state.storage.setAlarm(next);
  }
}
