// A listener ANOTHER local user (`runuser -u nobody`) puts on a dead worker's port, run by
// `restate.takeover.test.ts`. Plain Node, no packages. Arguments: MODE PORT LOG [TARGET_PORT].
//   relay: passes every connection on to a live worker at TARGET_PORT (so it answers the proxy's
//          version question with that worker's own proof) and keeps every byte the proxy sends
//          it in LOG.bytes
//   claim: an HTTP/2 server that says it runs version `nobody-code` with a forged proof, and
//          answers 200 to anything; every request it gets (path, body length) goes to LOG.
// LOG.ready says it listens; it counts connections there. It exits when its standard input ends.
import { appendFileSync, renameSync, writeFileSync } from "node:fs";
import http2 from "node:http2";
import net from "node:net";

const [mode, port, log, target] = process.argv.slice(2);
let connections = 0;
const ready = () => {
  // whole or not at all: the test reads it while connections come
  writeFileSync(`${log}.ready.tmp`, JSON.stringify({ connections }));
  renameSync(`${log}.ready.tmp`, `${log}.ready`);
};
writeFileSync(`${log}.bytes`, "");
writeFileSync(log, "");

let server;
if (mode === "relay") {
  server = net.createServer((client) => {
    connections++;
    ready();
    const upstream = net.connect(Number(target), "127.0.0.1");
    client.on("data", (chunk) => appendFileSync(`${log}.bytes`, chunk));
    client.pipe(upstream);
    upstream.pipe(client);
    client.on("error", () => undefined);
    upstream.on("error", () => undefined);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
} else {
  server = http2.createServer();
  server.on("connection", (socket) => {
    connections++;
    ready();
    socket.on("data", (chunk) => appendFileSync(`${log}.bytes`, chunk));
  });
  server.on("stream", (stream, headers) => {
    let length = 0;
    stream.on("data", (chunk) => {
      length += chunk.length;
    });
    stream.on("error", () => undefined);
    const path = headers[":path"];
    if (path === "/pi-course-restate/version") {
      stream.respond({ ":status": 200, "content-type": "application/json" });
      stream.end(JSON.stringify({ version: "nobody-code", proof: "forged" }));
    } else {
      stream.respond({ ":status": 200, "content-type": "application/vnd.restate.invocation.v5" });
    }
    stream.on("end", () => {
      appendFileSync(log, `${JSON.stringify({ path, length })}\n`);
      if (!stream.destroyed) stream.end();
    });
  });
}
server.listen(Number(port), "127.0.0.1", ready);
process.stdin.on("end", () => process.exit(0));
process.stdin.on("close", () => process.exit(0));
process.stdin.resume();
