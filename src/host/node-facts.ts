// Package host/ — the Node entry's adapters behind the agent's ports, one folder per concern (volumes/, serving/,
// metrics/, logs/; here: the machine's facts, probes' network). Imports layers below; never HTTP, state/ or an entry.
//
// What the node's v1.Node says about the machine that CRI does not: kubelet's nodeInfo sources (the kernel
// release, /etc/os-release's PRETTY_NAME, /etc/machine-id, the boot id). Read once at start-up.
import { readFileSync } from "node:fs";
import { hostname, release } from "node:os";

const read = (path: string) => {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return "";
  }
};

export function machineFacts(): {
  hostname: string;
  kernelVersion: string;
  osImage: string;
  machineID: string;
  bootID: string;
} {
  const pretty = /^PRETTY_NAME=(.*)$/m.exec(read("/etc/os-release"))?.[1]?.replace(/^"(.*)"$/, "$1") ?? "";
  return {
    hostname: hostname(),
    kernelVersion: release(),
    osImage: pretty || "Linux",
    machineID: read("/etc/machine-id"),
    bootID: read("/proc/sys/kernel/random/boot_id"),
  };
}
