// Policy settings and hostPath prefix matching.
import { describe, expect, it } from "vitest";
import { isUnderPrefix, normalizeHostPath } from "../../src/auth/host-path.js";
import { DEFAULT_POLICY_LEVEL, PolicySettings, nodePolicy } from "../../src/auth/policy.js";

describe("hostPath prefixes", () => {
  it.each([
    ["/srv/data", "/srv/data", true],
    ["/srv/data/x/y", "/srv/data", true],
    ["/srv/database", "/srv/data", false],
    ["/srv/data/../etc", "/srv/data", false],
    ["/srv/./data//x/", "/srv/data/", true],
    ["/srv/data/x/../..", "/srv/data", false],
    ["/../../srv/data", "/srv/data", true],
    ["relative/srv/data", "/srv/data", false],
    ["/anything", "/", true],
  ])("%s under %s: %s", (path, prefix, expected) => {
    expect(isUnderPrefix(path, prefix)).toBe(expected);
  });

  it("normalises like the kernel resolves a lexical path", () => {
    expect(normalizeHostPath("//a/./b/../c/")).toBe("/a/c");
    expect(normalizeHostPath("/..")).toBe("/");
  });
});

describe("PolicySettings", () => {
  it("defaults to baseline with no allow-list", () => {
    expect(DEFAULT_POLICY_LEVEL).toBe("baseline");
    expect(nodePolicy(PolicySettings.parse({}))).toEqual({ level: "baseline", hostPathAllow: [] });
  });

  it("parses a level and a normalised comma list", () => {
    const s = PolicySettings.parse({
      PODSYNC_POLICY: "restricted",
      PODSYNC_POLICY_HOSTPATH_ALLOW: " /srv/data/ , /var//log,/srv/data",
    });
    expect(nodePolicy(s)).toEqual({ level: "restricted", hostPathAllow: ["/srv/data", "/var/log"] });
  });

  it("names the bad setting", () => {
    const bad = PolicySettings.safeParse({ PODSYNC_POLICY: "root", PODSYNC_POLICY_HOSTPATH_ALLOW: "srv,/" });
    expect(bad.success).toBe(false);
    const issues = bad.error!.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    expect(issues).toContain("PODSYNC_POLICY: must be privileged, baseline or restricted");
    expect(issues).toContain("PODSYNC_POLICY_HOSTPATH_ALLOW.0: must be an absolute path");
  });

  it("refuses / as an allowed prefix", () => {
    const bad = PolicySettings.safeParse({ PODSYNC_POLICY_HOSTPATH_ALLOW: "/srv/..//" });
    expect(bad.error?.issues[0]?.message).toMatch(/allows every host path/);
  });
});
