// The node flags the server ships with, read from `npm start`'s script in the package's own package.json (the one
// place they are written). `podsync serve` runs in the CLI's process, which bin/podsync.mjs's shebang starts with
// the same flags; started another way (`node bin/podsync.mjs serve`), serve says what is missing.
import { readFileSync } from "node:fs";

/** The `--flag[=value]` arguments of `npm start`'s node command, in order. */
export function shippedNodeFlags(packageJson: string): string[] {
  const start = (JSON.parse(readFileSync(packageJson, "utf8")) as { scripts?: Record<string, string> }).scripts?.[
    "start"
  ];
  return (start ?? "").split(/\s+/).filter((a) => /^--(?!import$)[a-z0-9-]+(=\S+)?$/.test(a));
}

/** The shipped flags this process was not started with (from its argv or NODE_OPTIONS). */
export function missingNodeFlags(shipped: readonly string[], execArgv: readonly string[], nodeOptions = ""): string[] {
  const have = new Set([...execArgv, ...nodeOptions.split(/\s+/)].map((a) => a.replace(/_/g, "-")));
  return shipped.filter((f) => !have.has(f));
}
