// The podsync CLI's entry (bin/podsync.mjs runs the compiled dist/cli/main.js): find the command, parse its
// flags, run it; every error is printed once, as `podsync: MESSAGE`.
import { commandName, globalOptions, parseCommandArgs, UsageError } from "./args.js";
import { createCtx } from "./client.js";
import type { Command } from "./command.js";
import { commands } from "./registry.js";

function usage(): string {
  const width = Math.max(...Object.keys(commands).map((n) => n.length));
  return [
    "usage: podsync COMMAND [ARGS] [FLAGS]",
    "",
    "commands:",
    ...Object.entries(commands).map(([name, e]) => `  ${name.padEnd(width + 2)}${e.summary}`),
    "",
    "global flags:",
    ...flagLines(globalOptions),
    "",
    "podsync COMMAND --help shows a command's flags and examples.",
  ].join("\n");
}

function flagLines(options: Record<string, { type: string; short?: string; help?: string }>): string[] {
  const names = Object.entries(options).map(([k, s]) => [`${s.short ? `-${s.short}, ` : "    "}--${k}${s.type === "string" ? " VALUE" : ""}`, s.help ?? ""] as const);
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
    `global flags (podsync --help): ${Object.keys(globalOptions).map((k) => `--${k}`).join(" ")}`,
  ].join("\n");
}

async function main(argv: string[]) {
  const { name, rest } = commandName(argv);
  if (name === undefined) {
    console.log(usage());
    return;
  }
  const entry = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!entry) throw new UsageError(`unknown command "${name}"\n${usage()}`);
  const command = (await entry.load()).default;
  const { o, positionals } = parseCommandArgs(rest, command.options, name);
  if (o["help"]) {
    console.log(commandHelp(command));
    return;
  }
  await command.run(createCtx(name, positionals, o));
}

main(process.argv.slice(2)).catch((e: unknown) => {
  console.error(`podsync: ${e instanceof Error ? e.message : String(e)}`);
  process.exitCode = 2;
});
