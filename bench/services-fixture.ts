// The bench's Services: N ClusterIP Services with E endpoints each, in the lab's pod subnet (no pods behind them:
// only the kernel's rules and the DNS answers are measured with these).
import type { EndpointSlice, Service } from "../src/services/types.js";

export function fixture(n: number, eps: number, drop = -1): { services: Service[]; endpointSlices: EndpointSlice[] } {
  const services: Service[] = [];
  const endpointSlices: EndpointSlice[] = [];
  for (let i = 0; i < n; i++) {
    const name = `svc-${i}`;
    services.push({
      metadata: { name, namespace: "bench" },
      spec: {
        type: "ClusterIP",
        clusterIP: `10.96.${100 + Math.floor(i / 250)}.${(i % 250) + 1}`,
        ports: [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP" }],
      },
    });
    endpointSlices.push({
      metadata: { namespace: "bench", name: `${name}-abc`, labels: { "kubernetes.io/service-name": name } },
      addressType: "IPv4",
      endpoints: Array.from({ length: eps }, (_, j) => ({
        addresses: [`10.244.${200 + j}.${(i % 250) + 1}`],
        conditions: { ready: !(i === 0 && j === drop), serving: true, terminating: false },
      })),
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    });
  }
  return { services, endpointSlices };
}
