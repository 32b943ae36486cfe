// Package cli/ — the podsync CLI (an entry point): one file per command under commands/, listed in registry.ts,
// printers under print/, `get`'s types under resources/. Imports lower layers and node.ts (serve); nothing imports it.
//
// What a CLI command is: its flags (beside the global ones in args.ts), its help text, and run().
// A new command is one file under commands/ exporting a Command as default, and one line in registry.ts.
import type { OptionSpec } from "./args.js";
import type { Ctx } from "./client.js";

export interface Command {
  /** The usage lines, without the leading "podsync " (e.g. "get NAME [-n NS] [-o wide|json|yaml]"). */
  usage: string[];
  /** What it does, a few lines. */
  help: string;
  /** Example command lines, shown by `podsync CMD --help`. */
  examples?: string[];
  /** The command's own flags; the global ones (args.ts) are always accepted too. */
  options: Record<string, OptionSpec & { help?: string }>;
  run(ctx: Ctx): Promise<void>;
}
