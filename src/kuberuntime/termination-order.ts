// kubelet's terminationOrdering (pkg/kubelet/kuberuntime/kuberuntime_termination_order.go): when a pod with
// sidecars is killed, every sidecar waits for all the regular containers to exit, and each sidecar waits for the
// sidecars after it in the spec (so they stop in reverse order), each wait bounded by what is left of the
// container's grace period. Containers that are not running count as already terminated.
import { isRestartableInitContainer, type Container } from "../pod/schema.js";

interface Gate {
  done: Promise<void>;
  open: () => void;
}

function gate(): Gate {
  let open!: () => void;
  const done = new Promise<void>((r) => (open = r));
  return { done, open };
}

export interface TerminationOrdering {
  /** Wait until it is `name`'s turn to be stopped, at most `graceSeconds`; returns the seconds waited. */
  waitForTurn(name: string, graceSeconds: number): Promise<number>;
  /** `name` has exited: whoever waits on it may go. */
  containerTerminated(name: string): void;
}

/** newTerminationOrdering, or undefined for a pod without sidecars (kubelet orders only those). */
export function newTerminationOrdering(
  spec: { initContainers?: readonly Container[] | undefined; containers?: readonly Container[] | undefined },
  runningNames: readonly string[],
): TerminationOrdering | undefined {
  const inits = spec.initContainers ?? [];
  if (!inits.some(isRestartableInitContainer)) return undefined;
  const running = new Set(runningNames);
  const terminated = new Map<string, Gate>();
  const prereqs = new Map<string, Promise<void>[]>();
  const track = (name: string) => {
    const g = gate();
    terminated.set(name, g);
    if (!running.has(name)) g.open();
    return g.done;
  };
  const mains = (spec.containers ?? []).map((c) => track(c.name));
  let previousSidecar: string | undefined;
  for (const ic of [...inits].reverse()) {
    track(ic.name);
    if (!isRestartableInitContainer(ic)) continue;
    prereqs.set(ic.name, [...mains, ...(previousSidecar !== undefined ? [terminated.get(previousSidecar)!.done] : [])]);
    previousSidecar = ic.name;
  }
  return {
    async waitForTurn(name, graceSeconds) {
      if (graceSeconds <= 0) return 0;
      const start = performance.now();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const expired = new Promise<void>((r) => (timer = setTimeout(r, graceSeconds * 1000)));
      await Promise.race([Promise.all(prereqs.get(name) ?? []), expired]);
      clearTimeout(timer);
      return (performance.now() - start) / 1000;
    },
    containerTerminated(name) {
      terminated.get(name)?.open();
    },
  };
}
