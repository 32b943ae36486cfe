const steps = process.argv.slice(2);
const gc = globalThis.gc;
const used = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};
let prev = used();
for (const s of steps) {
  await import(s.startsWith("/") ? s : s);
  const u = used();
  console.log(((u - prev) / 1048576).toFixed(2).padStart(7), "MiB", s.replace("/work/wt-perf/", ""));
  prev = u;
}
console.log("total", (prev / 1048576).toFixed(1));
