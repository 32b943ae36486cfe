// The Service environment variables kubelet gives a container: pkg/kubelet/envvars/envvars.go FromServices
// (makeEnvVariableName, makeLinkVariables) over the Services kubelet_pods.go getServiceEnvVarMap picks: those of
// the pod's namespace with a ClusterIP (not headless, not ExternalName) when enableServiceLinks is on (the
// default). Upstream always adds the master `kubernetes` Service of the default namespace too; a node has no API
// server, so there is none (docs/services.md). makeEnvironmentVariables uses them for $(VAR) expansion and adds
// those the container does not set itself (expansion.ts containerEnv).

/** What the env vars read of a Service (a v1.Service fits it); the lower layer owns the shape. */
export interface ServiceEnvView {
  metadata: { name: string; namespace: string };
  spec: {
    clusterIP?: string | undefined;
    ports: readonly { name?: string | undefined; port: number; protocol?: string | undefined }[];
  };
}

/** Where the node's current Services come from (the node agent's service source; absent: none). */
export type ServiceLister = () => readonly ServiceEnvView[];

/** makeEnvVariableName: upper case, '-' as '_' (Service names are DNS-1035 labels: no dots, no leading digit). */
const envName = (s: string) => s.replace(/-/g, "_").toUpperCase();

const joinHostPort = (host: string, port: number) => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`);

/** envvars.FromServices, in order: the host, the first port, the named ports, then the docker-link variables. */
export function fromServices(services: readonly ServiceEnvView[]): [string, string][] {
  const out: [string, string][] = [];
  for (const s of services) {
    const ip = s.spec.clusterIP;
    if (!ip || ip === "None" || s.spec.ports.length === 0) continue;
    const prefix = envName(s.metadata.name);
    out.push([`${prefix}_SERVICE_HOST`, ip]);
    const portVar = `${prefix}_SERVICE_PORT`;
    out.push([portVar, String(s.spec.ports[0]!.port)]);
    for (const p of s.spec.ports) if (p.name) out.push([`${portVar}_${envName(p.name)}`, String(p.port)]);
    // makeLinkVariables: Docker's link variables.
    s.spec.ports.forEach((p, i) => {
      const proto = p.protocol || "TCP";
      const url = `${proto.toLowerCase()}://${joinHostPort(ip, p.port)}`;
      if (i === 0) out.push([`${prefix}_PORT`, url]);
      const pp = `${prefix}_PORT_${p.port}_${proto.toUpperCase()}`;
      out.push([pp, url], [`${pp}_PROTO`, proto.toLowerCase()], [`${pp}_PORT`, String(p.port)], [`${pp}_ADDR`, ip]);
    });
  }
  return out;
}

/** getServiceEnvVarMap: the variables of the namespace's Services (none when enableServiceLinks is false: there
 * are no master Services to add regardless). Services are taken by name, one each, sorted so the result does not
 * depend on the order they were stored in. */
export function serviceEnvVarMap(
  services: readonly ServiceEnvView[],
  namespace: string,
  enableServiceLinks: boolean | undefined,
): Map<string, string> {
  if (enableServiceLinks === false) return new Map();
  const mine = services
    .filter((s) => s.metadata.namespace === namespace)
    .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
  return new Map(fromServices(mine));
}
