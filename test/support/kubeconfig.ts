// A kubeconfig for real clients (kubectl, client-node, python) against a node a test started: its TLS URL and CA,
// one user with a static token (a read token the test signed), one context with its namespace.
import { writeFileSync } from "node:fs";

export interface KubeconfigFor {
  /** The cluster's and the context's name. */
  name: string;
  tls: { url: string; caCert: string | Uint8Array };
  token: string;
  namespace: string;
}

export function writeKubeconfig(file: string, k: KubeconfigFor): void {
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        {
          name: k.name,
          cluster: { server: k.tls.url, "certificate-authority-data": Buffer.from(k.tls.caCert).toString("base64") },
        },
      ],
      users: [{ name: "reader", user: { token: k.token } }],
      contexts: [{ name: k.name, context: { cluster: k.name, user: "reader", namespace: k.namespace } }],
      "current-context": k.name,
    }),
  );
}
