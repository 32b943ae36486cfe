// An exec client in its own process (so the test process's RSS is the server's alone), speaking kubectl's
// WebSocket channel protocol. argv: url token mode. Modes:
//   stall: read 1 MiB of stdout, then stop reading the socket (print "stalled"), and stay until killed;
//   count: read everything until the server closes, print "bytes <n>";
//   push:  send stdin frames of 32 KiB whenever this side holds under 1 MiB unsent, for ever; print "pushing".
import { WebSocket } from "ws";

const [url, token, mode] = process.argv.slice(2);
const ws = new WebSocket(url, ["v5.channel.k8s.io"], { headers: { authorization: `Bearer ${token}` } });
let bytes = 0;
let stalled = false;
ws.on("unexpected-response", (_req, res) => {
  let body = "";
  res.on("data", (b) => (body += b));
  res.on("end", () => {
    process.stdout.write(`refused ${res.statusCode} ${body}\n`);
    process.exit(0);
  });
});
ws.on("error", (e) => {
  process.stdout.write(`error ${e.message}\n`);
  process.exit(1);
});
ws.on("message", (data) => {
  if (data[0] === 1 || data[0] === 2) bytes += data.length - 1;
  else if (data[0] === 3) process.stdout.write(`status ${data.subarray(1).toString()}\n`);
  if (mode === "stall" && !stalled && bytes >= 1 << 20) {
    stalled = true;
    ws.pause();
    process.stdout.write("stalled\n");
  }
});
process.on("SIGTERM", () => {
  process.stdout.write(`bytes ${bytes}\n`);
  process.exit(0);
});
ws.on("close", (code, reason) => {
  process.stdout.write(`bytes ${bytes} close ${code} ${reason}\n`);
  process.exit(0);
});
if (mode === "push")
  ws.on("open", () => {
    const frame = Buffer.alloc(32 * 1024 + 1, 0x61);
    frame[0] = 0; // stdin
    process.stdout.write("pushing\n");
    const pump = () => {
      while (ws.bufferedAmount < 1 << 20) ws.send(frame);
      setTimeout(pump, 5);
    };
    pump();
  });
