// Start-up settings: every bad one is named with its reason; a config file sits under the environment.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadSettings, SettingsError } from "../../src/settings/node.js";

describe("settings", () => {
  it("defaults: localhost:8484, containerd's socket, 1 MiB bodies, EdDSA/ES256", () => {
    const s = loadSettings({});
    expect(s).toMatchObject({
      PODSYNC_HOST: "127.0.0.1",
      PODSYNC_PORT: 8484,
      PODSYNC_CRI_ENDPOINT: "unix:///run/containerd/containerd.sock",
      PODSYNC_MAX_BODY_BYTES: 1048576,
    });
    expect(s.PODSYNC_ALGORITHMS).toEqual(["EdDSA", "Ed25519", "ES256"]);
  });

  it("names every bad setting with its reason", () => {
    let msg = "";
    try {
      loadSettings({
        PODSYNC_PORT: "http",
        PODSYNC_JWKS_URL: "ftp://keys",
        PODSYNC_ALGORITHMS: "EdDSA,none",
        PODSYNC_POD_LOGS_DIR: "logs",
        PODSYNC_MAX_BODY_BYTES: "10",
      });
    } catch (e) {
      expect(e).toBeInstanceOf(SettingsError);
      msg = (e as Error).message;
    }
    for (const name of [
      "PODSYNC_PORT",
      "PODSYNC_JWKS_URL",
      "PODSYNC_ALGORITHMS",
      "PODSYNC_POD_LOGS_DIR",
      "PODSYNC_MAX_BODY_BYTES",
    ])
      expect(msg).toContain(name);
    expect(msg).toMatch(/never none/);
    expect(msg).toMatch(/absolute path/);
  });

  it("real keys need trusted issuers; only one key source", () => {
    expect(() => loadSettings({ PODSYNC_JWKS_FILE: "/x.json" })).toThrow(/PODSYNC_ISSUERS: required/);
    expect(() => loadSettings({ PODSYNC_JWKS_FILE: "/x.json", PODSYNC_JWKS: "{}", PODSYNC_ISSUERS: "a" })).toThrow(
      /only one of/,
    );
  });

  it("reads PODSYNC_CONFIG (JSON) with the environment on top", () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-cfg-"));
    const file = join(dir, "c.json");
    writeFileSync(
      file,
      JSON.stringify({ PODSYNC_PORT: 9000, PODSYNC_NODE_NAME: "from-file", PODSYNC_ISSUERS: ["a", "b"] }),
    );
    const s = loadSettings({ PODSYNC_CONFIG: file, PODSYNC_NODE_NAME: "from-env" });
    expect(s).toMatchObject({ PODSYNC_PORT: 9000, PODSYNC_NODE_NAME: "from-env", PODSYNC_ISSUERS: ["a", "b"] });
    expect(() => loadSettings({ PODSYNC_CONFIG: join(dir, "missing.json") })).toThrow(/PODSYNC_CONFIG: cannot read/);
  });
});
