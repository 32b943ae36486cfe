// Container spec hash: FNV-1a 32 over a canonical JSON form (keys sorted, defaults applied by the schema),
// hex encoded like kubelet's HashContainer. Stored in the io.kubernetes.container.hash annotation; a
// different hash means the spec changed and the container is restarted.
import type { Container } from "../pod/schema.js";

export function canonicalJSON(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJSON).join(",")}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJSON(obj[k])}`).join(",")}}`;
}

export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  const bytes = new TextEncoder().encode(s);
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i]!;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

const cache = new WeakMap<Container, string>();

export function hashContainer(container: Container): string {
  let h = cache.get(container);
  if (h === undefined) cache.set(container, (h = fnv1a32(canonicalJSON(container)).toString(16)));
  return h;
}
