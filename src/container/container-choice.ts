// Which container of a pod a logs or exec request means: the one named, or the pod's only one. The
// messages follow the API server's and kubelet's, so `kubectl`-trained readers see what they know.
import type { PodStatus } from "./types.js";

export class ContainerChoiceError extends Error {
  constructor(
    /** not-found: no such container (the valid names are given); bad-request: it cannot serve the request. */
    readonly kind: "not-found" | "bad-request",
    message: string,
    readonly containers: string[] = [],
  ) {
    super(message);
  }
}

/** Container names the pod's instances carry, in first-seen (newest-first) order. */
export function containerNames(status: PodStatus): string[] {
  return [...new Set(status.containerStatuses.map((c) => c.name))];
}

/**
 * The container asked for, or the pod's only one. `candidates` are the names a default may be chosen from
 * (the spec's app containers when known, else every name the runtime has).
 */
export function pickContainer(
  status: PodStatus,
  podName: string,
  asked: string | undefined,
  candidates = containerNames(status),
): string {
  const names = containerNames(status);
  if (asked !== undefined) {
    if (!names.includes(asked))
      throw new ContainerChoiceError(
        "not-found",
        `container ${JSON.stringify(asked)} is not valid for pod ${JSON.stringify(podName)}; choose one of: ${names.join(", ")}`,
        names,
      );
    return asked;
  }
  if (candidates.length === 1) return candidates[0]!;
  throw new ContainerChoiceError(
    "bad-request",
    `a container name must be specified for pod ${JSON.stringify(podName)}, choose one of: [${names.join(" ")}]`,
    names,
  );
}
