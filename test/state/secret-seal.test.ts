// Secrets at rest in the desired-state store: sealed under the node key, bound to the pod and the name,
// opened back to exactly what was signed; the key file made once, 0600.
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { importSealKey, newSealKeyBytes, sealPodObjects, unsealPodObjects } from "../../src/state/secret-seal.js";
import { loadSealKey, SEAL_KEY_FILE } from "../../src/state/seal-key.js";
import { bundleFromPayload } from "../../src/pod/bundle.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import { SealedDesiredState } from "../../src/state/sealed-desired-state.js";
import { storedObjects } from "../../src/pod/objects.js";
import { StateUnavailableError } from "../../src/pleg/state-unavailable.js";

const SECRET = "hunter2-at-rest";
const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: "creds" }, stringData: { password: SECRET } };
const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg" }, data: { a: "b" } };

describe("sealing Secrets for the desired-state store", () => {
  it("seals every Secret (nothing of its data stays in clear), keeps ConfigMaps, and opens back to what was signed", async () => {
    const key = await importSealKey(newSealKeyBytes());
    const stored = await sealPodObjects({ configMaps: [cm], secrets: [secret] }, key, "uid-1");
    const text = JSON.stringify(stored);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(Buffer.from(SECRET).toString("base64"));
    expect(stored).toEqual({
      configMaps: [cm],
      secrets: [{ kind: "SealedSecret", name: "creds", sealed: expect.stringMatching(/^v1\.[\w-]+\.[\w-]+$/) }],
    });
    // Sealing twice keeps the sealed form; opening gives the signed object back, which validates again.
    expect(await sealPodObjects(stored, key, "uid-1")).toEqual(stored);
    const opened = await unsealPodObjects(stored, key, "uid-1");
    expect(opened).toEqual({ configMaps: [cm], secrets: [secret] });
    const pod = {
      metadata: { name: "p", uid: "uid-1" },
      spec: {
        containers: [
          {
            name: "c",
            image: "i:1",
            env: [{ name: "PW", valueFrom: { secretKeyRef: { name: "creds", key: "password" } } }],
          },
        ],
      },
    };
    expect(bundleFromPayload({ pod, ...opened }).objects.secrets[0]!.metadata.name).toBe("creds");
  });

  it("does not open under another pod, another key, or after tampering", async () => {
    const key = await importSealKey(newSealKeyBytes());
    const stored = await sealPodObjects({ secrets: [secret] }, key, "uid-1");
    await expect(unsealPodObjects(stored, key, "uid-2")).rejects.toThrow(
      'stored Secret "creds" of pod uid-2 cannot be opened',
    );
    await expect(unsealPodObjects(stored, await importSealKey(newSealKeyBytes()), "uid-1")).rejects.toThrow(
      "cannot be opened",
    );
    const s = stored!.secrets![0] as { sealed: string };
    const tampered = { secrets: [{ ...s, sealed: s.sealed.slice(0, -2) + (s.sealed.endsWith("A") ? "BB" : "AA") }] };
    await expect(unsealPodObjects(tampered, key, "uid-1")).rejects.toThrow("cannot be opened");
  });

  it("the node key: made once under the state dir, 0600, the same on every load", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "podsync-seal-")), "state");
    const k1 = await loadSealKey(dir);
    const raw = readFileSync(join(dir, SEAL_KEY_FILE));
    expect(raw.byteLength).toBe(32);
    expect((statSync(join(dir, SEAL_KEY_FILE)).mode & 0o777).toString(8)).toBe("600");
    expect((statSync(dir).mode & 0o777).toString(8)).toBe("700");
    const stored = await sealPodObjects({ secrets: [secret] }, k1, "u");
    expect(await unsealPodObjects(stored, await loadSealKey(dir), "u")).toEqual({ secrets: [secret] });
    expect(readFileSync(join(dir, SEAL_KEY_FILE)).equals(raw)).toBe(true);
  });
});

describe("the sealed desired-state store", () => {
  const pod = {
    metadata: { name: "p", uid: "uid-s" },
    spec: {
      containers: [
        {
          name: "c",
          image: "i:1",
          env: [{ name: "PW", valueFrom: { secretKeyRef: { name: "creds", key: "password" } } }],
        },
      ],
    },
  };

  it("the inner store holds the Secret sealed; reads give back objects that validate again with the pod, same bytes", async () => {
    const b = bundleFromPayload({ pod, configMaps: [cm], secrets: [secret] });
    const inner = new MemoryDesiredState();
    const key = await importSealKey(newSealKeyBytes());
    const store = new SealedDesiredState(inner, async () => key);
    await store.put({ pod: b.pod, objects: storedObjects(b.objects), audit: { iss: "i", iat: 1 }, storedAt: 0 });
    const raw = JSON.stringify(await inner.list());
    expect(raw).not.toContain(SECRET);
    expect(raw).not.toContain(Buffer.from(SECRET).toString("base64"));
    const back = (await store.get("uid-s"))!;
    const again = bundleFromPayload({ pod: back.pod, ...back.objects });
    expect(new TextDecoder().decode(again.objects.secrets[0]!.data["password"])).toBe(SECRET);
    expect((await store.list())[0]!.objects).toEqual(back.objects);
    // replace seals the same way.
    await store.replace(1, [
      { pod: b.pod, objects: storedObjects(b.objects), audit: { iss: "i", iat: 2 }, storedAt: 0 },
    ]);
    expect(JSON.stringify(await inner.list())).not.toContain(SECRET);
  });

  it("the same pod and Secrets put again keep the stored sealed copy (no new seal, so the store sees no change); other Secrets are sealed anew", async () => {
    const b = bundleFromPayload({ pod, configMaps: [cm], secrets: [secret] });
    const inner = new MemoryDesiredState();
    const key = await importSealKey(newSealKeyBytes());
    const store = new SealedDesiredState(inner, async () => key);
    await store.put({ pod: b.pod, objects: storedObjects(b.objects), audit: { iss: "i", iat: 1 }, storedAt: 0 });
    const sealed = (await inner.get("uid-s"))!.objects;
    await store.put({ pod: b.pod, objects: storedObjects(b.objects), audit: { iss: "i", iat: 2 }, storedAt: 1 });
    expect((await inner.get("uid-s"))!.objects).toBe(sealed);
    expect((await inner.get("uid-s"))!.audit.iat).toBe(2);
    const changed = bundleFromPayload({
      pod,
      configMaps: [cm],
      secrets: [{ ...secret, stringData: { password: "other" } }],
    });
    await store.put({
      pod: changed.pod,
      objects: storedObjects(changed.objects),
      audit: { iss: "i", iat: 3 },
      storedAt: 2,
    });
    expect((await inner.get("uid-s"))!.objects).not.toEqual(sealed);
    expect(JSON.stringify(await inner.list())).not.toContain("other");
  });

  it("a large Secret (500 KB, under the 1 MiB object limit) is stored sealed and read back byte for byte", async () => {
    // Before: the ciphertext was spread into String.fromCharCode's arguments, a RangeError past ~125 KB
    // (a 500 on PUT).
    const bytes = new Uint8Array(500 * 1000).map((_, i) => (i * 31 + 7) & 0xff);
    const bigSecret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "big" },
      data: { blob: Buffer.from(bytes).toString("base64") },
    };
    const volPod = {
      metadata: { name: "p", uid: "uid-big" },
      spec: {
        volumes: [{ name: "s", secret: { secretName: "big" } }],
        containers: [{ name: "c", image: "i:1", volumeMounts: [{ name: "s", mountPath: "/s" }] }],
      },
    };
    const b = bundleFromPayload({ pod: volPod, secrets: [bigSecret] });
    const inner = new MemoryDesiredState();
    const key = await importSealKey(newSealKeyBytes());
    const store = new SealedDesiredState(inner, async () => key);
    await store.put({ pod: b.pod, objects: storedObjects(b.objects), audit: { iss: "i", iat: 1 }, storedAt: 0 });
    expect(JSON.stringify(await inner.list())).not.toContain(bigSecret.data.blob.slice(0, 64));
    const back = (await store.get("uid-big"))!;
    const again = bundleFromPayload({ pod: back.pod, ...back.objects });
    expect(Buffer.from(again.objects.secrets[0]!.data["blob"]!).equals(Buffer.from(bytes))).toBe(true);
  });

  it("a key that cannot be loaded is state-unavailable, and nothing is stored", async () => {
    const inner = new MemoryDesiredState();
    const store = new SealedDesiredState(inner, async () => {
      throw new StateUnavailableError(
        "the key that seals stored Secrets",
        Object.assign(new Error("EACCES"), { code: "EACCES" }),
      );
    });
    const b = bundleFromPayload({ pod, secrets: [secret] });
    await expect(
      store.put({ pod: b.pod, objects: storedObjects(b.objects), audit: { iss: "i", iat: 1 }, storedAt: 0 }),
    ).rejects.toBeInstanceOf(StateUnavailableError);
    expect(await inner.list()).toEqual([]);
    // A pod without Secrets needs no key.
    await store.put({ pod: b.pod, audit: { iss: "i", iat: 1 }, storedAt: 0 });
    expect(await inner.list()).toHaveLength(1);
  });

  it("a key that no longer opens a pod's Secrets (lost or replaced): that pod comes back without its objects, the others and the set stay usable", async () => {
    const inner = new MemoryDesiredState();
    const b = bundleFromPayload({ pod, secrets: [secret] });
    await new SealedDesiredState(inner, async () => importSealKey(newSealKeyBytes())).put({
      pod: b.pod,
      objects: storedObjects(b.objects),
      audit: { iss: "i", iat: 1 },
      storedAt: 0,
    });
    await inner.put({
      pod: { ...b.pod, metadata: { ...b.pod.metadata, uid: "uid-plain" } },
      audit: { iss: "i", iat: 1 },
      storedAt: 0,
    });
    // Another key: what the first sealed does not open.
    const store = new SealedDesiredState(inner, async () => importSealKey(newSealKeyBytes()));
    const all = await store.list();
    expect(all.map((e) => [e.pod.metadata.uid, e.objects])).toEqual([
      ["uid-s", undefined],
      ["uid-plain", undefined],
    ]);
    expect((await store.get("uid-s"))!.audit.iat).toBe(1);
    // Sending the pod again with its Secrets repairs it.
    await store.put({ pod: b.pod, objects: storedObjects(b.objects), audit: { iss: "i", iat: 2 }, storedAt: 0 });
    expect((await store.get("uid-s"))!.objects?.secrets).toHaveLength(1);
  });
});
