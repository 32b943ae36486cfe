// The cluster DNS as the node runs it, alone in a process of its own for bench/services.ts: 100 Services × 3
// endpoints, on 127.0.0.1:<BENCH_DNS_PORT>, forwarding to <BENCH_DNS_UPSTREAM> (the bench's stub on 127.0.0.1).
import { startServiceDataplane } from "../src/services/dataplane.js";
import { memoryServiceSource } from "../src/services/types.js";
import { fixture } from "./services-fixture.js";

const dp = await startServiceDataplane({
  source: memoryServiceSource(fixture(100, 3)),
  settings: {
    serviceCIDRs: [],
    clusterDomain: "cluster.local",
    proxy: false,
    dns: {
      address: "127.0.0.1",
      port: Number(process.env["BENCH_DNS_PORT"]),
      upstreams: [process.env["BENCH_DNS_UPSTREAM"]!],
    },
  },
});
await dp.dns!.ready();
process.stdout.write("ready\n");
process.on("SIGTERM", () => void dp.stop().then(() => process.exit(0)));
