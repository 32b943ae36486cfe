// kubelet's Service env vars: pkg/kubelet/envvars/envvars_test.go TestFromServices, and getServiceEnvVarMap's
// choice of Services (namespace, enableServiceLinks), and makeEnvironmentVariables' use of them.
import { describe, expect, it } from "vitest";
import { fromServices, serviceEnvVarMap, type ServiceEnvView } from "../../src/container/service-env.js";
import { containerEnv } from "../../src/container/expansion.js";
import { validatePod } from "../../src/pod/validate.js";

const svc = (name: string, clusterIP: string, ports: ServiceEnvView["spec"]["ports"], namespace = "default") => ({
  metadata: { name, namespace },
  spec: { clusterIP, ports },
});

describe("envvars.FromServices (envvars_test.go TestFromServices)", () => {
  it("gives the upstream table's variables, in its order", () => {
    const sl = [
      svc("foo-bar", "1.2.3.4", [{ port: 8080, protocol: "TCP" }]),
      svc("abc-123", "5.6.7.8", [
        { name: "u-d-p", port: 8081, protocol: "UDP" },
        { name: "t-c-p", port: 8081, protocol: "TCP" },
      ]),
      svc("q-u-u-x", "9.8.7.6", [
        { port: 8082, protocol: "TCP" },
        { name: "8083", port: 8083, protocol: "TCP" },
      ]),
      svc("svrc-clusterip-none", "None", [{ port: 8082, protocol: "TCP" }]),
      svc("svrc-clusterip-empty", "", [{ port: 8082, protocol: "TCP" }]),
    ];
    expect(fromServices(sl)).toEqual([
      ["FOO_BAR_SERVICE_HOST", "1.2.3.4"],
      ["FOO_BAR_SERVICE_PORT", "8080"],
      ["FOO_BAR_PORT", "tcp://1.2.3.4:8080"],
      ["FOO_BAR_PORT_8080_TCP", "tcp://1.2.3.4:8080"],
      ["FOO_BAR_PORT_8080_TCP_PROTO", "tcp"],
      ["FOO_BAR_PORT_8080_TCP_PORT", "8080"],
      ["FOO_BAR_PORT_8080_TCP_ADDR", "1.2.3.4"],
      ["ABC_123_SERVICE_HOST", "5.6.7.8"],
      ["ABC_123_SERVICE_PORT", "8081"],
      ["ABC_123_SERVICE_PORT_U_D_P", "8081"],
      ["ABC_123_SERVICE_PORT_T_C_P", "8081"],
      ["ABC_123_PORT", "udp://5.6.7.8:8081"],
      ["ABC_123_PORT_8081_UDP", "udp://5.6.7.8:8081"],
      ["ABC_123_PORT_8081_UDP_PROTO", "udp"],
      ["ABC_123_PORT_8081_UDP_PORT", "8081"],
      ["ABC_123_PORT_8081_UDP_ADDR", "5.6.7.8"],
      ["ABC_123_PORT_8081_TCP", "tcp://5.6.7.8:8081"],
      ["ABC_123_PORT_8081_TCP_PROTO", "tcp"],
      ["ABC_123_PORT_8081_TCP_PORT", "8081"],
      ["ABC_123_PORT_8081_TCP_ADDR", "5.6.7.8"],
      ["Q_U_U_X_SERVICE_HOST", "9.8.7.6"],
      ["Q_U_U_X_SERVICE_PORT", "8082"],
      ["Q_U_U_X_SERVICE_PORT_8083", "8083"],
      ["Q_U_U_X_PORT", "tcp://9.8.7.6:8082"],
      ["Q_U_U_X_PORT_8082_TCP", "tcp://9.8.7.6:8082"],
      ["Q_U_U_X_PORT_8082_TCP_PROTO", "tcp"],
      ["Q_U_U_X_PORT_8082_TCP_PORT", "8082"],
      ["Q_U_U_X_PORT_8082_TCP_ADDR", "9.8.7.6"],
      ["Q_U_U_X_PORT_8083_TCP", "tcp://9.8.7.6:8083"],
      ["Q_U_U_X_PORT_8083_TCP_PROTO", "tcp"],
      ["Q_U_U_X_PORT_8083_TCP_PORT", "8083"],
      ["Q_U_U_X_PORT_8083_TCP_ADDR", "9.8.7.6"],
    ]);
  });

  it("brackets an IPv6 ClusterIP in the link URLs (net.JoinHostPort)", () => {
    const vars = new Map(fromServices([svc("v6", "fd00::10", [{ port: 80, protocol: "TCP" }])]));
    expect(vars.get("V6_PORT")).toBe("tcp://[fd00::10]:80");
    expect(vars.get("V6_PORT_80_TCP_ADDR")).toBe("fd00::10");
  });
});

describe("getServiceEnvVarMap", () => {
  const all = [
    svc("redis-master", "10.96.0.20", [{ port: 6379, protocol: "TCP" }]),
    svc("other", "10.96.0.21", [{ port: 80, protocol: "TCP" }], "prod"),
  ];
  it("takes the Services of the pod's namespace only (no kubernetes Service: there is no API server)", () => {
    const m = serviceEnvVarMap(all, "default", undefined);
    expect(m.get("REDIS_MASTER_SERVICE_HOST")).toBe("10.96.0.20");
    expect(m.has("OTHER_SERVICE_HOST")).toBe(false);
    expect(m.has("KUBERNETES_SERVICE_HOST")).toBe(false);
  });
  it("gives none with enableServiceLinks: false", () => {
    expect(serviceEnvVarMap(all, "default", false).size).toBe(0);
  });
});

describe("makeEnvironmentVariables with Service variables", () => {
  const serviceEnv = new Map([
    ["REDIS_SERVICE_HOST", "10.96.0.5"],
    ["REDIS_SERVICE_PORT", "6379"],
  ]);
  it("expands $(VAR) from them, keeps the container's own over them, and adds the rest", () => {
    const pod = validatePod({
      metadata: { name: "p", uid: "u1" },
      spec: {
        containers: [
          {
            name: "c",
            image: "x",
            env: [
              { name: "URL", value: "redis://$(REDIS_SERVICE_HOST):$(REDIS_SERVICE_PORT)" },
              { name: "REDIS_SERVICE_PORT", value: "1" },
            ],
          },
        ],
      },
    });
    const c = pod.spec.containers[0]!;
    const vars = containerEnv(c, undefined, serviceEnv);
    expect(vars.get("URL")).toBe("redis://10.96.0.5:6379");
    expect(vars.get("REDIS_SERVICE_PORT")).toBe("1");
    expect(vars.get("REDIS_SERVICE_HOST")).toBe("10.96.0.5");
  });
});
