// workers/: the Cloudflare Worker's Durable Objects and the pieces that talk to them; one class per file.
// Owns the Worker-only runtime; imports http/, the engine and state/, never src/node.ts or src/host/ file I/O.
// The few Workers runtime shapes used here (kept local rather than pulling the global workers types
// into a project that also type-checks against Node's and the DOM's).
export interface DOStorage {
  get<T>(key: string): Promise<T | undefined>;
  put(key: string, value: unknown): Promise<void>;
  put(entries: Record<string, unknown>): Promise<void>;
  delete(key: string): Promise<boolean>;
  delete(keys: string[]): Promise<number>;
  list<T>(options?: { limit?: number; prefix?: string }): Promise<Map<string, T>>;
  getAlarm(): Promise<number | null>;
  setAlarm(at: number): Promise<void>;
  deleteAlarm(): Promise<void>;
}
export interface DOState {
  storage: DOStorage;
}
export interface DONamespace {
  idFromName(name: string): unknown;
  get(id: unknown): { fetch(input: string, init?: RequestInit): Promise<Response> };
}
