// List answers decoded item by item, reusing what an earlier answer already decoded (src/cri/list-decoder.ts).
import { describe, expect, it } from "vitest";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  ContainerSchema,
  ContainerState,
  ListContainersResponseSchema,
  ListPodSandboxResponseSchema,
  PodSandboxSchema,
} from "../../src/gen/runtime/v1/api_pb.js";
import { cachingListDecoder } from "../../src/cri/list-decoder.js";

const container = (id: string, state = ContainerState.CONTAINER_RUNNING) =>
  create(ContainerSchema, {
    id,
    podSandboxId: "sb",
    metadata: { name: id, attempt: 0 },
    state,
    createdAt: 1_700_000_000_000_000_000n,
    labels: { "io.kubernetes.pod.uid": "u", app: "x".repeat(300) },
    annotations: { "io.kubernetes.container.hash": "abc" },
  });
const answer = (...cs: ReturnType<typeof container>[]) =>
  toBinary(ListContainersResponseSchema, create(ListContainersResponseSchema, { containers: cs }));

describe("cachingListDecoder", () => {
  it("decodes what protobuf-es decodes, and only the items whose bytes changed", () => {
    const d = cachingListDecoder(ListContainersResponseSchema, ContainerSchema, "containers");
    const one = answer(container("a"), container("b"), container("c"));
    const r1 = d.decode(one);
    expect(r1).toEqual(fromBinary(ListContainersResponseSchema, one));
    expect(d.decoded).toBe(3);
    const r2 = d.decode(answer(container("a"), container("b", ContainerState.CONTAINER_EXITED), container("c")));
    expect(d.decoded).toBe(4);
    expect(r2.containers[0]).toBe(r1.containers[0]);
    expect(r2.containers[2]).toBe(r1.containers[2]);
    expect(r2.containers[1]!.state).toBe(ContainerState.CONTAINER_EXITED);
    expect(d.decode(new Uint8Array())).toEqual(create(ListContainersResponseSchema));
  });

  it("an item whose maps come in another order is the same item (containerd sends Go's random map order)", () => {
    const d = cachingListDecoder(ListContainersResponseSchema, ContainerSchema, "containers");
    const labels = { "io.kubernetes.pod.uid": "u", "io.kubernetes.pod.name": "p", app: "x" };
    const reversed = Object.fromEntries(Object.entries(labels).reverse());
    const one = answer(create(ContainerSchema, { ...container("a"), labels }));
    const other = answer(create(ContainerSchema, { ...container("a"), labels: reversed }));
    expect(Buffer.from(one).equals(Buffer.from(other))).toBe(false);
    const r1 = d.decode(one);
    const r2 = d.decode(other);
    expect(d.decoded).toBe(1);
    expect(r2.containers[0]).toBe(r1.containers[0]);
    expect(r2).toEqual(fromBinary(ListContainersResponseSchema, other));
    // A value that changed is a changed item.
    d.decode(answer(create(ContainerSchema, { ...container("a"), labels: { ...reversed, app: "y" } })));
    expect(d.decoded).toBe(2);
  });

  it("a map that repeats a key keeps its order in the key: the last entry wins, as protobuf-es decodes it", () => {
    const d = cachingListDecoder(ListContainersResponseSchema, ContainerSchema, "containers");
    const part = (v: string) => toBinary(ContainerSchema, create(ContainerSchema, { labels: { k: v } }));
    // Two encodings of one message concatenated are their merge: both entries of `k`, the later one wins.
    const item = (first: string, second: string) => {
      const body = Buffer.concat([Buffer.from(toBinary(ContainerSchema, container("a"))), part(first), part(second)]);
      return Buffer.concat([Buffer.from([0x0a]), Buffer.from(varintBytes(body.length)), body]);
    };
    expect(d.decode(item("1", "2")).containers[0]!.labels["k"]).toBe("2");
    expect(d.decode(item("2", "1")).containers[0]!.labels["k"]).toBe("1");
    expect(d.decoded).toBe(2);
  });

  it("a sandbox list the same way; bytes of another shape are decoded whole (and fail as protobuf-es fails)", () => {
    const d = cachingListDecoder(ListPodSandboxResponseSchema, PodSandboxSchema, "items");
    const bytes = toBinary(
      ListPodSandboxResponseSchema,
      create(ListPodSandboxResponseSchema, { items: [create(PodSandboxSchema, { id: "s1", labels: { a: "b" } })] }),
    );
    expect(d.decode(bytes).items[0]!.id).toBe("s1");
    expect(() => d.decode(new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]))).toThrow();
  });

  it("memory stays bounded: items no answer asks for again are dropped", () => {
    const d = cachingListDecoder(ListContainersResponseSchema, ContainerSchema, "containers");
    for (let i = 0; i < 5000; i++) d.decode(answer(container(`c${i}`)));
    const first = d.decoded;
    d.decode(answer(container("c0")));
    expect(d.decoded).toBe(first + 1); // long gone
    d.decode(answer(container("c4999")));
    expect(d.decoded).toBe(first + 1); // still kept
  });

  it("the bound follows the node's size: a relist's answer stays whole however many small answers came between", () => {
    const d = cachingListDecoder(ListContainersResponseSchema, ContainerSchema, "containers");
    const node = Array.from({ length: 100 }, (_, i) => container(`n${i}`));
    d.decode(answer(...node));
    expect(d.decoded).toBe(100);
    // 150 changed objects seen by single-pod lists: fewer than twice the relist's 100 since its turn.
    for (let i = 0; i < 150; i++) d.decode(answer(container(`n${i % 100}`, ContainerState.CONTAINER_EXITED)));
    d.decode(answer(...node));
    expect(d.decoded).toBe(200);
    // A small node keeps little: 2000 changes through 1-item answers leave at most 2 × 64 items.
    const small = cachingListDecoder(ListContainersResponseSchema, ContainerSchema, "containers");
    for (let i = 0; i < 2000; i++) small.decode(answer(container(`s${i}`)));
    const before = small.decoded;
    small.decode(answer(container("s1871")));
    expect(small.decoded).toBe(before + 1);
    small.decode(answer(container("s1999")));
    expect(small.decoded).toBe(before + 1);
  });
});

function varintBytes(n: number): number[] {
  const out: number[] = [];
  for (; n > 0x7f; n = Math.floor(n / 128)) out.push((n & 0x7f) | 0x80);
  out.push(n);
  return out;
}
