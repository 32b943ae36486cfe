// The one canonical JSON (src/util/canonical-json.ts): the container spec hash in podsync's annotation, the
// desired store's same-spec test and the controllers' comparisons all read it, so its output is pinned here.
import { describe, expect, it } from "vitest";
import { canonicalJSON } from "../../src/util/canonical-json.js";

describe("canonical JSON", () => {
  it("sorts keys at every depth and leaves out what JSON.stringify leaves out", () => {
    expect(canonicalJSON({ b: [1, { d: 1, c: undefined, a: "x" }], a: null })).toBe(
      '{"a":null,"b":[1,{"a":"x","d":1}]}',
    );
    expect(canonicalJSON({ b: 1, a: 2 })).toBe(canonicalJSON({ a: 2, b: 1 }));
    expect(canonicalJSON([undefined, () => 1])).toBe(JSON.stringify([undefined, () => 1]));
    expect(canonicalJSON({ f: () => 1, s: Symbol("x"), n: 1 })).toBe('{"n":1}');
    expect(canonicalJSON(undefined)).toBe("null");
    expect(canonicalJSON('a"b')).toBe(JSON.stringify('a"b'));
    expect(canonicalJSON({ 'k"ey': 1 })).toBe('{"k\\"ey":1}');
  });

  it("is JSON.stringify's output for key-sorted data, and honours toJSON", () => {
    const sorted = { a: [1, "two", true, null, { x: 1.5, y: { z: [] } }], b: {}, c: "é\n" };
    expect(canonicalJSON(sorted)).toBe(JSON.stringify(sorted));
    const at = new Date(Date.UTC(2026, 11, 7));
    expect(canonicalJSON({ at })).toBe(JSON.stringify({ at }));
  });
});
