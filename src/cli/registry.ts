// The CLI's commands: name → one line of summary and the module that implements it (loaded only when run, so
// `podsync --help` and a usage error load no command code). A new command is one file and one line here.
import type { Command } from "./command.js";

export interface Entry {
  summary: string;
  load: () => Promise<{ default: Command }>;
}

export const commands: Record<string, Entry> = {
  serve: { summary: "start podsync on this node (what npm start runs)", load: () => import("./commands/serve.js") },
  keygen: { summary: "write a signing key pair", load: () => import("./commands/keys/keygen.js") },
  sign: { summary: "print a compact JWS carrying a pod", load: () => import("./commands/keys/sign.js") },
  sync: {
    summary: "sign one pod and send it to the node, which runs it and keeps it running",
    load: () => import("./commands/sync.js"),
  },
  plan: { summary: "what the node would do for a pod, doing nothing", load: () => import("./commands/sync.js") },
  apply: { summary: "make a file's pods the node's whole desired set", load: () => import("./commands/apply.js") },
  pods: {
    summary: "the node's pods in every namespace, like kubectl get pods -A",
    load: () => import("./commands/pods.js"),
  },
  get: {
    summary: "pods, like kubectl get (by name, -l, -o wide|name|json|yaml|jsonpath, -w)",
    load: () => import("./commands/get.js"),
  },
  wait: {
    summary: "wait for a pod's condition (Ready) or its deletion, like kubectl wait",
    load: () => import("./commands/wait.js"),
  },
  status: {
    summary: "a pod's sandbox and containers as the runtime reports them",
    load: () => import("./commands/status.js"),
  },
  delete: { summary: "stop, remove and forget pods, like kubectl delete", load: () => import("./commands/delete.js") },
  logs: { summary: "a container's log, like kubectl logs", load: () => import("./commands/logs.js") },
  exec: { summary: "run a command in a container", load: () => import("./commands/exec.js") },
  token: {
    summary: "print a Bearer token for curl (status, logs, delete, metrics)",
    load: () => import("./commands/keys/token.js"),
  },
  kubeconfig: {
    summary: "a kubeconfig for kubectl against the node (its plugin mints read tokens)",
    load: () => import("./commands/keys/kubeconfig.js"),
  },
  fleet: {
    summary: "pull mode: join tokens, the node registry, labels, revocation (docs/fleet.md)",
    load: () => import("./fleet/command.js"),
  },
  scale: {
    summary: "set a workload's replicas, like kubectl scale",
    load: () => import("./commands/deploy/scale.js"),
  },
  rollout: {
    summary: "status, restart, undo, history, pause, resume of a workload's rollout, like kubectl rollout",
    load: () => import("./commands/deploy/rollout.js"),
  },
  describe: { summary: "a workload in detail, like kubectl describe", load: () => import("./commands/describe.js") },
  dev: {
    summary: "dev worker: the Worker (workerd), cri-proxy and a node on this machine, in one command",
    load: () => import("./commands/dev.js"),
  },
  volumes: { summary: "the node's persistentVolumeClaim directories", load: () => import("./commands/volumes.js") },
  services: {
    summary: "services flush: remove the Service data plane's nftables table (inet podsync)",
    load: () => import("./services/command.js"),
  },
};
