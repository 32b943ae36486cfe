// The CLI's argument parsing: the global flags every command takes, node's parseArgs underneath, and usage
// errors in podsync's own words (never parseArgs's text).
import { parseArgs } from "node:util";

export type Opts = Record<string, string | boolean | string[] | undefined>;

/** An error the CLI reports itself (bad input, a pod not found, a key it cannot read): printed once as
 * `podsync: MESSAGE`, exit code 1 as kubectl's (cmdutil.DefaultErrorExitCode). */
export class CliError extends Error {}

/** A usage error: as CliError, followed by kubectl's pointer "See 'podsync CMD --help' for usage." */
export class UsageError extends CliError {
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
  }
}

export function fail(msg: string): never {
  throw new CliError(msg);
}

export function usage(msg: string, command?: string): never {
  throw new UsageError(msg, command);
}

/** A flag as node:util parseArgs takes it; defined here, below the commands that declare theirs. */
export interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
  multiple?: boolean;
}

/** Flags every command takes. */
export const globalOptions: Record<string, OptionSpec & { help: string }> = {
  namespace: { type: "string", short: "n", help: "the namespace of the pods named (default: default)" },
  quiet: { type: "boolean", short: "q", help: "no progress or notes on stderr, only errors" },
  url: { type: "string", help: "the node's URL (default $PODSYNC_URL, else http://127.0.0.1:8484)" },
  key: { type: "string", help: "the private signing key (default: see podsync token --help)" },
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
      const spec =
        long !== undefined ? globalOptions[long] : Object.values(globalOptions).find((s) => s.short === a.slice(1));
      if (spec?.type === "string") i++;
      continue;
    }
    return { name: a, rest: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { name: undefined, rest: [...argv] };
}

/** Parses a command's arguments (global flags and its own); a bad flag is a UsageError naming it. */
export function parseCommandArgs(
  argv: string[],
  options: Record<string, OptionSpec>,
  command: string,
): { o: Opts; positionals: string[] } {
  const all = { ...globalOptions, ...options };
  try {
    const { args, falses } = booleanValues(argv, all, command);
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: Object.fromEntries(
        Object.entries(all).map(([k, s]) => [
          k,
          { type: s.type, ...(s.short ? { short: s.short } : {}), ...(s.multiple ? { multiple: true } : {}) },
        ]),
      ),
    });
    for (const f of falses) (values as Opts)[f] = false;
    return { o: values as Opts, positionals };
  } catch (e) {
    return usage(usageMessage(e as Error & { code?: string }), command);
  }
}

/** kubectl's `--flag=true|false` for boolean flags (`--wait=false`, `--no-headers=true`): parseArgs takes no
 * value for a boolean, so `=true` becomes the bare flag and `=false` is set to false after parsing. Nothing
 * after `--` is touched. */
function booleanValues(
  argv: string[],
  all: Record<string, OptionSpec>,
  command: string,
): { args: string[]; falses: string[] } {
  const end = argv.indexOf("--");
  const head = end < 0 ? argv : argv.slice(0, end);
  const falses: string[] = [];
  const out = head.flatMap((a) => {
    const m = /^--([\w-]+)=(.*)$/.exec(a);
    if (!m || all[m[1]!]?.type !== "boolean") return [a];
    if (m[2] === "true") return [`--${m[1]}`];
    if (m[2] === "false") return (falses.push(m[1]!), []);
    return usage(`flag --${m[1]} is true or false, not "${m[2]}"`, command);
  });
  return { args: end < 0 ? out : [...out, ...argv.slice(end)], falses };
}

/** parseArgs's errors, reworded. */
function usageMessage(e: Error & { code?: string }): string {
  const quoted = /'([^']+)'/.exec(e.message)?.[1] ?? "";
  const long = /--[\w-]+/.exec(quoted)?.[0] ?? quoted.split(/[ ,]/)[0];
  switch (e.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `unknown flag ${quoted}`;
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      return e.message.includes("does not take an argument")
        ? `flag ${long} takes no value`
        : `flag ${long} needs a value (to give one that starts with "-", write ${long}=VALUE)`;
    default:
      return e.message.split("\n")[0] ?? e.message;
  }
}
