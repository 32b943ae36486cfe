// The node flags the server ships with, read from `npm start`'s script in the package's own package.json (the one
// place they are written). `podsync serve` runs in the CLI's process, which bin/podsync.mjs's shebang starts with
// the same flags; started another way (`node bin/podsync.mjs serve`), serve says what is missing.
import { readFileSync } from "node:fs";

/** The node flags (`--flag[=value]`, not `--import`) of a command line, in order. */
export function nodeFlagsOf(command: string): string[] {
  return command.split(/\s+/).filter((a) => /^--(?!import$)[a-z0-9-]+(=\S+)?$/.test(a));
}

/** The node flags of `npm start`'s command. */
export function shippedNodeFlags(packageJson: string): string[] {
  const scripts = (JSON.parse(readFileSync(packageJson, "utf8")) as { scripts?: Record<string, string> }).scripts;
  return nodeFlagsOf(scripts?.["start"] ?? "");
}

/** The shipped flags this process was not started with (from its argv or NODE_OPTIONS). */
export function missingNodeFlags(shipped: readonly string[], execArgv: readonly string[], nodeOptions = ""): string[] {
  const have = new Set([...execArgv, ...nodeOptions.split(/\s+/)].map((a) => a.replace(/_/g, "-")));
  return shipped.filter((f) => !have.has(f));
}
