// The CLI's argument parsing: the global flags every command takes, node's parseArgs underneath, and usage
// errors in podsync's own words (never parseArgs's text).
import { parseArgs } from "node:util";

export type Opts = Record<string, string | boolean | string[] | undefined>;

/** A usage or input error: printed as `podsync: MESSAGE` (and, for usage, a pointer to --help), exit code 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
  }
}

export function fail(msg: string, command?: string): never {
  throw new UsageError(msg, command);
}

/** Flags every command takes. */
/** A flag as node:util parseArgs takes it; defined here, below the commands that declare theirs. */
export interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
  multiple?: boolean;
}

export const globalOptions: Record<string, OptionSpec & { help: string }> = {
  url: { type: "string", help: "the node's URL (default $PODSYNC_URL, else http://127.0.0.1:8080)" },
  key: { type: "string", help: "the private signing key (default $PODSYNC_KEY, else .podsync/dev-key.json)" },
  aud: { type: "string", help: "the node name the token is for (default: what the server's /healthz says)" },
  iss: { type: "string", help: "the token's issuer (default: the key file's \"iss\", else podsync-dev)" },
  ttl: { type: "string", help: "the token's lifetime in seconds (default 60)" },
  help: { type: "boolean", short: "h", help: "this help" },
};

/** The command name: the first positional, skipping global flags and their values. */
export function commandName(argv: readonly string[]): { name: string | undefined; rest: string[] } {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") break;
    if (a.startsWith("-")) {
      const long = a.startsWith("--") ? a.slice(2) : undefined;
      const spec = long !== undefined ? globalOptions[long] : Object.values(globalOptions).find((s) => s.short === a.slice(1));
      if (spec?.type === "string") i++;
      continue;
    }
    return { name: a, rest: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { name: undefined, rest: [...argv] };
}

/** Parses a command's arguments (global flags and its own); a bad flag is a UsageError naming it. */
export function parseCommandArgs(argv: string[], options: Record<string, OptionSpec>, command: string): { o: Opts; positionals: string[] } {
  const all = { ...globalOptions, ...options };
  try {
    const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, strict: true, options: Object.fromEntries(Object.entries(all).map(([k, s]) => [k, { type: s.type, ...(s.short ? { short: s.short } : {}), ...(s.multiple ? { multiple: true } : {}) }])) });
    return { o: values as Opts, positionals };
  } catch (e) {
    return fail(usageMessage(e as Error & { code?: string }), command);
  }
}

/** parseArgs's errors, reworded. */
function usageMessage(e: Error & { code?: string }): string {
  const quoted = /'([^']+)'/.exec(e.message)?.[1] ?? "";
  const long = /--[\w-]+/.exec(quoted)?.[0] ?? quoted.split(/[ ,]/)[0];
  switch (e.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `unknown flag ${quoted}`;
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      return e.message.includes("does not take an argument") ? `flag ${long} takes no value` : `flag ${long} needs a value (to give one that starts with "-", write ${long}=VALUE)`;
    default:
      return e.message.split("\n")[0] ?? e.message;
  }
}
