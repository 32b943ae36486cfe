// Environment variables and kubelet's $(VAR) expansion in env values, command and args.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Container } from "../pod/schema.js";
import type { KeyValueSchema } from "../gen/runtime/v1/api_pb.js";

/** third_party/forked/golang/expansion: $(VAR) is replaced when VAR is defined, $$ escapes a $. */
export function expand(input: string, vars: ReadonlyMap<string, string>): string {
  if (!input.includes("$")) return input;
  let out = "";
  for (let i = 0; i < input.length; i++) {
    const ch = input[i]!;
    if (ch !== "$" || i + 1 >= input.length) {
      out += ch;
      continue;
    }
    const nx = input[i + 1]!;
    if (nx === "$") {
      out += "$";
      i++;
    } else if (nx === "(") {
      const close = input.indexOf(")", i + 2);
      if (close < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      const val = vars.get(name);
      out += val ?? `$(${name})`;
      i = close;
    } else {
      out += ch;
    }
  }
  return out;
}

/** makeEnvironmentVariables: each value may refer to the variables defined before it (later ones win). */
export function containerEnv(container: Container): Map<string, string> {
  const vars = new Map<string, string>();
  for (const e of container.env ?? []) vars.set(e.name, expand(e.value, vars));
  return vars;
}

const utf8 = new TextEncoder();
// CRI KeyValue.value is bytes since cri-api 1.36 (binary env values); ours are UTF-8 text.
export const toKeyValues = (vars: Map<string, string>): MessageInitShape<typeof KeyValueSchema>[] =>
  [...vars].map(([key, value]) => ({ key, value: utf8.encode(value) }));

