// A kubecontainer.Status fixture with zero values, like the kubelet tests' struct literals.
import { create } from "@bufbuild/protobuf";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import type { ContainerState, ContainerStatus, PodStatus } from "../../src/container/types.js";

export function containerStatus(
  id: string,
  name: string,
  state: ContainerState,
  hash: string,
  over: Partial<ContainerStatus> = {},
): ContainerStatus {
  return {
    id,
    name,
    state,
    hash,
    createdAt: 0,
    startedAt: 0,
    finishedAt: 0,
    exitCode: 0,
    image: "",
    imageRef: "",
    restartCount: 0,
    reason: "",
    message: "",
    attempt: 0,
    sandboxId: "sandboxID",
    backoffStreak: 0,
    gracePeriodSeconds: undefined,
    ...over,
  };
}

/** The PodStatus of kubelet's makeBasePodAndStatus (pod "foo" in "foo-ns", uid 12345678): one ready sandbox
 * "sandboxID" with IP 10.0.0.1, and the container statuses given. */
export function kubeletBasePodStatus(containerStatuses: ContainerStatus[]): PodStatus {
  return {
    id: "12345678",
    name: "foo",
    namespace: "foo-ns",
    ips: [],
    sandboxStatuses: [
      create(api.PodSandboxStatusSchema, {
        id: "sandboxID",
        state: api.PodSandboxState.SANDBOX_READY,
        metadata: { name: "foo", namespace: "foo-ns", uid: "sandboxuid", attempt: 0 },
        network: { ip: "10.0.0.1" },
      }),
    ],
    containerStatuses,
  };
}
