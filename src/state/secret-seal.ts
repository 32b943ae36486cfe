// Secrets at rest in the desired-state store: each Secret signed with a pod is kept only sealed, AES-256-GCM
// under a node key, bound to the pod's uid and the Secret's name (the additional data), so a stored Secret
// can be opened neither without the key nor under another pod or name. ConfigMaps are stored as sent.
// WebCrypto only, so the Worker's store can seal the same way (its key from a Worker secret); the Node key
// lives in the state dir (seal-key.ts).
//
// The sealed form keeps what the store needs to list and match (kind, name, namespace), and nothing of the data:
//   { kind: "SealedSecret", name, namespace?, sealed: "v1.<iv base64url>.<ciphertext+tag base64url>" }
// unsealPodObjects gives back the Secret exactly as it was signed, to be validated again with the pod.

export interface SealedSecret {
  kind: "SealedSecret";
  name: string;
  namespace?: string;
  sealed: string;
}

export interface StoredObjects {
  configMaps?: unknown[];
  secrets?: unknown[];
}

/** In chunks: spreading a whole ciphertext into fromCharCode's arguments throws RangeError past ~125 KB. */
const b64 = (b: Uint8Array) => {
  let s = "";
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return btoa(s);
};
const b64url = (b: Uint8Array) => b64(b).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const fromB64url = (s: string) =>
  Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
const utf8 = new TextEncoder();
const additional = (podUid: string, name: string) => utf8.encode(`podsync/secret/v1\u0000${podUid}\u0000${name}`);

/** A node key (32 random bytes) as an AES-GCM key that cannot be exported again. */
export function importSealKey(raw: Uint8Array): Promise<CryptoKey> {
  if (raw.byteLength !== 32) throw new Error("a seal key is 32 bytes");
  return crypto.subtle.importKey("raw", raw as Uint8Array<ArrayBuffer>, { name: "AES-GCM" }, false, [
    "encrypt",
    "decrypt",
  ]);
}

export const newSealKeyBytes = () => crypto.getRandomValues(new Uint8Array(32));

const nameOf = (o: unknown): { name: string; namespace?: string } => {
  const meta = (o as { metadata?: { name?: unknown; namespace?: unknown } } | null)?.metadata;
  if (typeof meta?.name !== "string")
    throw new Error("a Secret to seal needs metadata.name (validate the bundle first)");
  return typeof meta.namespace === "string" ? { name: meta.name, namespace: meta.namespace } : { name: meta.name };
};

export const isSealed = (o: unknown): o is SealedSecret =>
  typeof o === "object" && o !== null && (o as { kind?: unknown }).kind === "SealedSecret";

/** The objects as the store should keep them: every Secret sealed (ones already sealed are kept). */
export async function sealPodObjects(
  objects: StoredObjects | undefined,
  key: CryptoKey,
  podUid: string,
): Promise<StoredObjects | undefined> {
  if (!objects) return undefined;
  const secrets = await Promise.all(
    (objects.secrets ?? []).map(async (s): Promise<SealedSecret> => {
      if (isSealed(s)) return s;
      const id = nameOf(s);
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const ct = new Uint8Array(
        await crypto.subtle.encrypt(
          { name: "AES-GCM", iv, additionalData: additional(podUid, id.name) },
          key,
          utf8.encode(JSON.stringify(s)),
        ),
      );
      return { kind: "SealedSecret", ...id, sealed: `v1.${b64url(iv)}.${b64url(ct)}` };
    }),
  );
  return { ...(objects.configMaps ? { configMaps: objects.configMaps } : {}), ...(objects.secrets ? { secrets } : {}) };
}

/** The objects as they were signed. A Secret that does not open (another key, another pod, tampered) is an error. */
export async function unsealPodObjects(
  objects: StoredObjects | undefined,
  key: CryptoKey,
  podUid: string,
): Promise<StoredObjects | undefined> {
  if (!objects) return undefined;
  const secrets = await Promise.all(
    (objects.secrets ?? []).map(async (s) => {
      if (!isSealed(s)) return s;
      const [v, iv, ct] = s.sealed.split(".");
      if (v !== "v1" || !iv || !ct) throw new Error(`stored Secret "${s.name}": unknown sealed format`);
      try {
        const pt = await crypto.subtle.decrypt(
          { name: "AES-GCM", iv: fromB64url(iv), additionalData: additional(podUid, s.name) },
          key,
          fromB64url(ct),
        );
        return JSON.parse(new TextDecoder().decode(pt)) as unknown;
      } catch {
        throw new Error(`stored Secret "${s.name}" of pod ${podUid} cannot be opened with this node's key`);
      }
    }),
  );
  return { ...(objects.configMaps ? { configMaps: objects.configMaps } : {}), ...(objects.secrets ? { secrets } : {}) };
}
