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
