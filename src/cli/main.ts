// The podsync CLI's entry (bin/podsync.mjs runs the compiled dist/cli/main.js): find the command, parse its
// flags, run it. Every error is printed once on stderr, as `podsync: MESSAGE`, with exit code 1 (kubectl's);
// exec exits with the command's own code.
import { createRequire } from "node:module";
import { CliError, commandName, globalOptions, parseCommandArgs, UsageError } from "./args.js";
import { createCtx, DEFAULT_URL, ServerError } from "./client.js";
import type { Command } from "./command.js";
import { formatServerError } from "./output.js";
import { commands } from "./registry.js";

function usage(): string {
  const width = Math.max(...Object.keys(commands).map((n) => n.length));
  return [
    "podsync: signed pod specs in, kubelet-style pods on this node out.",
    "",
    "usage: podsync COMMAND [ARGS] [FLAGS]",
    "",
    "commands:",
    ...Object.entries(commands).map(([name, e]) => `  ${name.padEnd(width + 2)}${e.summary}`),
    "",
    "global flags:",
    ...flagLines(globalOptions),
    "",
    `The node is at --url, $PODSYNC_URL, or ${DEFAULT_URL}. podsync COMMAND --help shows a command's flags and examples.`,
  ].join("\n");
}

function flagLines(options: Record<string, { type: string; short?: string; help?: string }>): string[] {
  const names = Object.entries(options).map(
    ([k, s]) =>
      [`${s.short ? `-${s.short}, ` : "    "}--${k}${s.type === "string" ? " VALUE" : ""}`, s.help ?? ""] as const,
  );
  const width = Math.max(...names.map(([n]) => n.length));
  return names.map(([n, h]) => `  ${n.padEnd(width + 2)}${h}`.trimEnd());
}

function commandHelp(c: Command): string {
  return [
    ...c.usage.map((u, i) => `${i === 0 ? "usage: " : "       "}podsync ${u}`),
    "",
    c.help,
    ...(Object.keys(c.options).length ? ["", "flags:", ...flagLines(c.options)] : []),
    ...(c.examples?.length ? ["", "examples:", ...c.examples.map((e) => `  ${e}`)] : []),
    "",
    `global flags (see podsync --help): ${Object.entries(globalOptions)
      .map(([k, s]) => (s.short ? `-${s.short}/--${k}` : `--${k}`))
      .join(" ")}`,
  ].join("\n");
}

/** The package's version (package.json ships with the package: dist/cli/ and src/cli/ are two levels below it). */
function version(): string {
  const pkg = createRequire(import.meta.url)("../../package.json") as { version: string };
  return `podsync ${pkg.version}`;
}

async function main(argv: string[]) {
  if (argv[0] === "--version" || argv[0] === "version") {
    console.log(version());
    return;
  }
  const { name, rest } = commandName(argv);
  if (name === undefined || name === "help") {
    const topic = name === "help" ? rest.find((a) => !a.startsWith("-")) : undefined;
    if (topic !== undefined && Object.hasOwn(commands, topic)) {
      console.log(commandHelp((await commands[topic]!.load()).default));
      return;
    }
    const asked = argv.includes("--help") || argv.includes("-h") || name === "help";
    // Bare `podsync` is a usage error (exit 1), the usage on stderr; --help is an answer (stdout, exit 0).
    (asked ? process.stdout : process.stderr).write(`${usage()}\n`);
    if (!asked) process.exitCode = 1;
    return;
  }
  const entry = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!entry) {
    const near = Object.keys(commands).find((c) => c.startsWith(name.slice(0, 3)));
    throw new UsageError(
      `unknown command "${name}"${near ? ` (did you mean "${near}"?)` : ""}; podsync --help lists the commands`,
    );
  }
  const command = (await entry.load()).default;
  const flags = rest.includes("--") ? rest.slice(0, rest.indexOf("--")) : rest;
  if (flags.includes("--help") || flags.includes("-h")) {
    console.log(commandHelp(command));
    return;
  }
  const { o, positionals } = parseCommandArgs(rest, command.options, name);
  await command.run(createCtx(name, positionals, o));
}

main(process.argv.slice(2)).catch((e: unknown) => {
  if (e instanceof ServerError) process.stderr.write(`podsync: ${formatServerError(e)}\n`);
  else if (e instanceof CliError) {
    process.stderr.write(`podsync: ${e.message}\n`);
    if (e instanceof UsageError && e.command) process.stderr.write(`See 'podsync ${e.command} --help' for usage.\n`);
  } else process.stderr.write(`podsync: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});
