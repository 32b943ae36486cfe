// The types `podsync get` knows: kubectl's names for each (plural, singular, short) → its module.
import type { Resource } from "./resource.js";

const types: { names: string[]; load: () => Promise<{ default: Resource }> }[] = [
  { names: ["pods", "pod", "po"], load: () => import("./pods.js") },
];

/** The resource type named (case-insensitive), or undefined. */
export async function findResource(name: string): Promise<Resource | undefined> {
  const t = types.find((t) => t.names.includes(name.toLowerCase()));
  return t ? (await t.load()).default : undefined;
}

export const resourceNames = (): string[] => types.map((t) => t.names[0]!);
