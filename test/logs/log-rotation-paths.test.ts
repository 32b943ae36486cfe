// The rotation pass's log paths: ContainerStatus once per container while it is listed, not on every pass
// (src/host/logs/container-log-rotation.ts, a written difference from kubelet's processContainer).
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { rotateLogs, type LogRotationOptions } from "../../src/host/logs/container-log-rotation.js";

type Cri = LogRotationOptions["cri"];
type Answer<K extends keyof Cri> = Awaited<ReturnType<Cri[K]>>;

function fakeRuntime(dir: string) {
  const listed = new Set(["a", "b"]);
  const calls: string[] = [];
  const cri: Cri = {
    listContainers: async () =>
      ({ containers: [...listed].map((id) => ({ id })) }) as unknown as Answer<"listContainers">,
    containerStatus: async ({ containerId }) => {
      calls.push(`status ${containerId}`);
      return { status: { logPath: join(dir, `${containerId}.log`) } } as Answer<"containerStatus">;
    },
    reopenContainerLog: async ({ containerId }) => {
      calls.push(`reopen ${containerId}`);
      writeFileSync(join(dir, `${containerId}.log`), "");
      return {} as Answer<"reopenContainerLog">;
    },
  };
  return { cri, listed, calls };
}

describe("log rotation's log paths", () => {
  it("asks each container's status once while it is listed, and rotates by the kept path", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-rot-"));
    for (const id of ["a", "b"]) writeFileSync(join(dir, `${id}.log`), "x");
    const rt = fakeRuntime(dir);
    const o: LogRotationOptions = { cri: rt.cri, maxSize: 100, maxFiles: 3, intervalMs: 10_000, logPaths: new Map() };
    await rotateLogs(o);
    await rotateLogs(o);
    expect(rt.calls).toEqual(["status a", "status b"]);

    // Over the size: rotated by the path kept from the first pass, no new status call.
    writeFileSync(join(dir, "a.log"), "y".repeat(200));
    await rotateLogs(o);
    expect(rt.calls).toEqual(["status a", "status b", "reopen a"]);
    expect(readdirSync(dir).filter((f) => f.startsWith("a.log.")).length).toBe(1);

    // A container that leaves the list leaves the map; one that comes back is asked again.
    rt.listed.delete("b");
    await rotateLogs(o);
    expect([...o.logPaths!.keys()]).toEqual(["a"]);
    rt.listed.add("b");
    await rotateLogs(o);
    expect(rt.calls.at(-1)).toBe("status b");
  });
});
