// The node's own CPU and memory counters for NodeMetrics, as cAdvisor reads the root cgroup on a host: CPU time
// from /proc/stat (every state but idle and iowait; USER_HZ ticks, 100 a second on Linux), the memory working set
// as usage less inactive file pages (MemTotal − MemFree − Inactive(file), /proc/meminfo).
import { readFileSync } from "node:fs";

const USER_HZ = 100;

export function readNodeUsage(): { cpuNs: number; atNs: number; memoryWorkingSetBytes: number } | undefined {
  try {
    const atNs = Date.now() * 1e6;
    const cpu = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest time is already in user)
    const busy = (cpu[0] ?? 0) + (cpu[1] ?? 0) + (cpu[2] ?? 0) + (cpu[5] ?? 0) + (cpu[6] ?? 0) + (cpu[7] ?? 0);
    const mem = Object.fromEntries(
      readFileSync("/proc/meminfo", "utf8")
        .split("\n")
        .map((l) => /^([^:]+):\s+(\d+)/.exec(l))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => [m[1]!, Number(m[2]) * 1024]),
    );
    const used = (mem["MemTotal"] ?? 0) - (mem["MemFree"] ?? 0);
    return {
      cpuNs: (busy / USER_HZ) * 1e9,
      atNs,
      memoryWorkingSetBytes: Math.max(0, used - (mem["Inactive(file)"] ?? 0)),
    };
  } catch {
    return undefined;
  }
}
