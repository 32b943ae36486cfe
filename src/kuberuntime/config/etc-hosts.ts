// The kubelet-managed /etc/hosts (kubelet_pods.go: makeMounts, makeHostsMount, ensureHostsFile,
// managedHostsFileContent, nodeHostsFileContent, hostsEntriesFromHostAliases): <pod dir>/etc-hosts, written
// at every container start and mounted at /etc/hosts in each container that does not mount /etc/hosts itself,
// once the pod has an IP. A pod on the pod network gets localhost, the IPv6 names, its IPs with its hostname
// (and FQDN when it has a subdomain), then its hostAliases; a hostNetwork pod gets the node's /etc/hosts and
// its hostAliases. Without the node filesystem (Workers) the runtime's own file stays (containerd copies the
// node's), and hostAliases are refused.
import type { Container, Pod } from "../../pod/schema.js";
import type { FieldError } from "../../pod/validate.js";
import { podDir } from "../../volumemanager/pod-dirs.js";

export const ETC_HOSTS_PATH = "/etc/hosts";
const MANAGED_HOSTS_HEADER = "# Kubernetes-managed hosts file.\n";
const MANAGED_HOSTS_HEADER_WITH_HOST_NETWORK = "# Kubernetes-managed hosts file (host network).\n";

/** kubelet's getEtcHostsPath under the pod dir. */
export const etcHostsFile = (rootDir: string, uid: string) => `${podDir(rootDir, uid)}/etc-hosts`;

/** Whether kubelet mounts its hosts file into this container: the pod has an IP and the container does not
 * mount /etc/hosts itself. */
export const mountsEtcHosts = (container: Container, podIPs: readonly string[]) =>
  podIPs.length > 0 && !(container.volumeMounts ?? []).some((m) => m.mountPath === ETC_HOSTS_PATH);

/** kubelet_pods.go hostsEntriesFromHostAliases: "for each IP, write all aliases onto single line in hosts file",
 * tab-separated (an alias with no hostnames still gets its line, as kubelet writes it). */
function hostsEntriesFromHostAliases(aliases: Pod["spec"]["hostAliases"]): string {
  if (!aliases?.length) return "";
  return `\n# Entries added by HostAliases.\n${aliases.map((a) => `${a.ip}\t${(a.hostnames ?? []).join("\t")}\n`).join("")}`;
}

/** managedHostsFileContent */
export function managedHostsFileContent(
  podIPs: readonly string[],
  hostname: string,
  domain: string,
  aliases: Pod["spec"]["hostAliases"],
): string {
  let out = MANAGED_HOSTS_HEADER;
  out += "127.0.0.1\tlocalhost\n";
  out += "::1\tlocalhost ip6-localhost ip6-loopback\n";
  out += "fe00::0\tip6-localnet\n";
  out += "fe00::0\tip6-mcastprefix\n";
  out += "fe00::1\tip6-allnodes\n";
  out += "fe00::2\tip6-allrouters\n";
  for (const ip of podIPs) out += domain ? `${ip}\t${hostname}.${domain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  return out + hostsEntriesFromHostAliases(aliases);
}

/** nodeHostsFileContent: the node's own file, for a hostNetwork pod. */
export const nodeHostsFileContent = (nodeHosts: string, aliases: Pod["spec"]["hostAliases"]) =>
  MANAGED_HOSTS_HEADER_WITH_HOST_NETWORK + nodeHosts + hostsEntriesFromHostAliases(aliases);

/** hostAliases where the hosts file cannot be written (no node filesystem). */
export function hostAliasesUnsupported(pod: Pod, why: string): FieldError[] {
  return pod.spec.hostAliases?.length
    ? [{ path: "spec.hostAliases", message: `hostAliases cannot be used on this deployment: ${why}` }]
    : [];
}
