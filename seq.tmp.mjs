const f=(x)=>(x/1048576).toFixed(2);
let prevH=0;
for (const a of process.argv.slice(2)) { for (const m of a.split(",")) await import(m.startsWith(".")? "/work/main/"+m.slice(2): m); gc(); gc(); const h=process.memoryUsage().heapUsed; console.log(a.padEnd(50), f(h), "+"+f(h-prevH)); prevH=h; }
