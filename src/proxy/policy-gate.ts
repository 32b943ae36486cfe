// The node policy at cri-proxy: RunPodSandbox and CreateContainer are decoded and held against the same
// node policy as a signed pod (src/auth/cri-policy.ts), so a caller holding the proxy's token gets no more
// than a signer does. Everything else passes through as opaque bytes.
//
// What is forwarded is what was checked: the request is re-encoded from the decoded message, and a request
// carrying a field this CRI schema does not know is refused (the runtime might know it; the gate could not
// check it). A CreateContainer's config is checked, and so is the copy of the sandbox config it carries
// (containerd reads parts of it); beyond that it is checked with facts about its sandbox that the request
// cannot be trusted for: the pod uid (podsync's own host directories for that pod) and the sandbox's namespaces,
// read from the runtime with PodSandboxStatus and cached by sandbox id (a sandbox's config never changes).
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import {
  CreateContainerRequestSchema,
  PodSandboxStatusRequestSchema,
  PodSandboxStatusResponseSchema,
  RunPodSandboxRequestSchema,
  type NamespaceOption,
} from "../gen/runtime/v1/api_pb.js";
import {
  checkCreateContainer,
  checkRunPodSandbox,
  podsyncInternalMount,
  type CriPolicyContext,
} from "../auth/cri-policy.js";
import { formatViolations, type NodePolicy, type Violation } from "../auth/policy.js";
import { GrpcCode } from "../cri/errors.js";

export const RUN_POD_SANDBOX = "/runtime.v1.RuntimeService/RunPodSandbox";
export const CREATE_CONTAINER = "/runtime.v1.RuntimeService/CreateContainer";
const POD_SANDBOX_STATUS = "/runtime.v1.RuntimeService/PodSandboxStatus";

export interface PolicyGateOptions {
  policy: NodePolicy;
  /** PODSYNC_ROOT_DIR: podsync's emptyDir and termination-message files live under <rootDir>/pods/<uid>/. */
  rootDir: string;
  /** PODSYNC_POD_LOGS_DIR: when set, sandboxes must log under it (the runtime writes the log files). */
  podLogsDir?: string | undefined;
  /** Sandboxes remembered (id → uid, namespaces); the oldest is dropped past this. */
  cacheSize?: number;
}

/** One unary call on the upstream runtime: the reply's bytes, or its gRPC error. */
export type UpstreamCall = (
  path: string,
  body: Buffer,
  deadline: number,
) => Promise<{ code: number; details: string; body?: Buffer }>;

export type GateResult = { ok: true; body: Buffer } | { ok: false; code: number; details: string; rules?: string[] };

interface SandboxFacts {
  /** The runtime's full id (a request may name a sandbox by a prefix of it). */
  id: string;
  uid: string;
  namespaces: NamespaceOption | undefined;
}

/** The pod schema's uid rule (src/pod/schema.ts): one path component, so <rootDir>/pods/<uid> stays a pod's own. */
const SAFE_UID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** gRPC status messages travel in a header; keep them well under HTTP header limits. */
const MAX_DETAILS = 2048;

export interface PolicyGate {
  /** The body to forward for `path`, or the refusal. Only RunPodSandbox and CreateContainer are decoded. */
  admit(path: string, body: Buffer, deadline: number): Promise<GateResult>;
}

export function createPolicyGate(o: PolicyGateOptions, upstream: UpstreamCall): PolicyGate {
  const { policy } = o;
  // privileged with no hostPath allow-list has no check a CRI config could fail: the proxy stays opaque.
  const off = policy.level === "privileged" && policy.hostPathAllow.length === 0;
  const sandboxFacts = createSandboxFacts(upstream, o.cacheSize ?? 4096);

  const context = (uid: string | undefined): CriPolicyContext => ({
    // A uid that is not one path component names no pod directory of podsync's: no internal mounts then.
    isInternalMount: uid !== undefined && SAFE_UID.test(uid) ? podsyncInternalMount(o.rootDir, uid) : () => false,
    ...(o.podLogsDir !== undefined ? { podLogsDir: o.podLogsDir } : {}),
  });

  return {
    async admit(path, body, deadline) {
      if (off || (path !== RUN_POD_SANDBOX && path !== CREATE_CONTAINER)) return { ok: true, body };
      const schema = path === RUN_POD_SANDBOX ? RunPodSandboxRequestSchema : CreateContainerRequestSchema;
      const method = path === RUN_POD_SANDBOX ? "RunPodSandbox" : "CreateContainer";
      let req;
      try {
        req = fromBinary(schema as DescMessage, body);
      } catch (e) {
        return {
          ok: false,
          code: GrpcCode.INVALID_ARGUMENT,
          details: `cri-proxy could not decode the ${method} request: ${(e as Error).message}`,
        };
      }
      const unknown = unknownFields(req, "");
      if (unknown.length)
        return {
          ok: false,
          code: GrpcCode.PERMISSION_DENIED,
          details: cap(
            `cri-proxy cannot check ${method} against the node policy: unknown field ${unknown.join(", ")} (not in its CRI schema)`,
          ),
          rules: ["unknownField"],
        };
      let violations: Violation[];
      if (path === RUN_POD_SANDBOX) {
        const r = req as MessageShape<typeof RunPodSandboxRequestSchema>;
        violations = checkRunPodSandbox(r, policy, context(r.config?.metadata?.uid));
        // podsync never picks a runtime handler; another handler (kata, gVisor, one with annotations enabled)
        // would be judged by rules written for runc's.
        if (r.runtimeHandler !== "" && policy.level !== "privileged")
          violations.push({
            path: "runtimeHandler",
            rule: "runtimeHandler",
            message: `runtime handler ${JSON.stringify(r.runtimeHandler)} is not allowed (podsync uses the runtime's default)`,
          });
      } else {
        const r = req as MessageShape<typeof CreateContainerRequestSchema>;
        const facts = await sandboxFacts(r.podSandboxId, deadline);
        if ("code" in facts) return { ok: false, ...facts };
        violations = checkCreateContainer(r, policy, { ...context(facts.uid), sandboxNamespaces: facts.namespaces });
        // The request's own copy of the sandbox config is not only informational: containerd reads parts of it
        // (privileged, cgroup parent) at CreateContainer, so it must pass as a RunPodSandbox would.
        if (r.sandboxConfig)
          violations.push(
            ...checkRunPodSandbox(
              create(RunPodSandboxRequestSchema, { config: r.sandboxConfig }),
              policy,
              context(facts.uid),
            ).map((v) => ({ ...v, path: v.path.replace(/^config/, "sandboxConfig") })),
          );
        // The container goes into the sandbox that was checked, never one a prefix would resolve to later.
        r.podSandboxId = facts.id;
      }
      if (violations.length)
        return {
          ok: false,
          code: GrpcCode.PERMISSION_DENIED,
          details: refusal(policy, violations),
          rules: [...new Set(violations.map((v) => v.rule))],
        };
      return { ok: true, body: Buffer.from(toBinary(schema as DescMessage, req)) };
    },
  };
}

/** A sandbox's facts (full id, pod uid, namespaces) read from the runtime with PodSandboxStatus, cached by id. */
function createSandboxFacts(
  upstream: UpstreamCall,
  cacheSize: number,
): (id: string, deadline: number) => Promise<SandboxFacts | { code: number; details: string }> {
  const sandboxes = new Map<string, SandboxFacts>();
  return async function sandboxFacts(
    id: string,
    deadline: number,
  ): Promise<SandboxFacts | { code: number; details: string }> {
    const hit = sandboxes.get(id);
    if (hit) return hit;
    const req = toBinary(PodSandboxStatusRequestSchema, {
      $typeName: "runtime.v1.PodSandboxStatusRequest",
      podSandboxId: id,
      verbose: false,
    });
    const r = await upstream(POD_SANDBOX_STATUS, Buffer.from(req), deadline);
    if (r.code !== GrpcCode.OK)
      return {
        code: r.code,
        details: `cri-proxy could not read sandbox ${JSON.stringify(id)} to check the container against the node policy: ${r.details}`,
      };
    let status;
    try {
      status = fromBinary(PodSandboxStatusResponseSchema, r.body ?? Buffer.alloc(0)).status;
    } catch (e) {
      return {
        code: GrpcCode.INTERNAL,
        details: `cri-proxy could not decode the runtime's PodSandboxStatus: ${(e as Error).message}`,
      };
    }
    // A sandbox the runtime answers for without a status cannot be judged: refuse rather than check the
    // container without its sandbox's namespaces.
    if (!status?.id)
      return {
        code: GrpcCode.NOT_FOUND,
        details: `cri-proxy found no status for sandbox ${JSON.stringify(id)} to check the container against the node policy`,
      };
    const facts: SandboxFacts = {
      id: status.id,
      uid: status.metadata?.uid ?? "",
      namespaces: status.linux?.namespaces?.options,
    };
    // Only a sandbox the runtime knows is cached; ids are the runtime's, so a hit is the same sandbox.
    if (status.id === id) {
      if (sandboxes.size >= cacheSize) sandboxes.delete(sandboxes.keys().next().value!);
      sandboxes.set(id, facts);
    }
    return facts;
  };
}

/** The HTTP 403 `policy` detail (formatViolations), then each field with its rule, as the 403's errors list them. */
export function refusal(policy: NodePolicy, violations: readonly Violation[]): string {
  return cap(
    `${formatViolations(policy.level, violations)}; refused fields: ${violations.map((v) => `${v.path} (${v.rule})`).join(", ")}`,
  );
}

const cap = (s: string): string => (s.length <= MAX_DETAILS ? s : `${s.slice(0, MAX_DETAILS - 1)}…`);

/** Paths of fields the decoder kept as unknown ("config.linux.securityContext#99"), depth first. */
function unknownFields(m: unknown, path: string): string[] {
  if (typeof m !== "object" || m === null) return [];
  if (Array.isArray(m)) return m.flatMap((x, i) => unknownFields(x, `${path}[${i}]`));
  if (m instanceof Uint8Array) return [];
  const out: string[] = [];
  const own = (m as { $unknown?: { no: number }[] }).$unknown;
  if (own?.length) out.push(...own.map((u) => `${path || "(request)"}#${u.no}`));
  for (const [k, v] of Object.entries(m))
    if (k !== "$unknown" && k !== "$typeName") out.push(...unknownFields(v, path ? `${path}.${k}` : k));
  return out;
}
