// Preloaded (--import) into a server a test spawns with --expose-gc: on SIGUSR2 it collects garbage (twice, so
// what the first pass freed is gone) and writes one line to stderr, `HEAP {"rss":…,"heapUsed":…,…}` in bytes:
// how much the process still holds, as against what its allocator and V8 keep mapped.
process.on("SIGUSR2", () => {
  globalThis.gc?.();
  globalThis.gc?.();
  process.stderr.write(`HEAP ${JSON.stringify(process.memoryUsage())}\n`);
});
