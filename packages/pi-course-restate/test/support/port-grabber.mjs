// A program ANOTHER local user (`runuser -u nobody`) runs to take the engine's proxy port the
// moment it is free, run by `restate.attacks.ports.test.ts`. Plain Node, no packages.
// Arguments: PORT LOG. It tries to listen on 127.0.0.1:PORT every millisecond until it can, then
// serves HTTP/2 as a worker would, answering 200 to anything. LOG gets a line per event:
// `listening`, `connection`, and each request's headers as JSON (a run's request carries the
// engine's signed request identity, `x-restate-jwt-v1`); LOG.bytes gets every request's body
// (a run's journal: its input). LOG.ready says it started trying. It exits when its standard
// input ends.
import { appendFileSync, writeFileSync } from "node:fs";
import http2 from "node:http2";

const [port, log] = process.argv.slice(2);
writeFileSync(log, "");
writeFileSync(`${log}.bytes`, "");
const server = http2.createServer();
server.on("connection", () => appendFileSync(log, "connection\n"));
server.on("stream", (stream, headers) => {
  appendFileSync(log, `${JSON.stringify(headers)}\n`);
  stream.on("error", () => undefined);
  stream.on("data", (chunk) => appendFileSync(`${log}.bytes`, chunk));
  stream.respond({ ":status": 200 });
});
server.on("sessionError", () => undefined);
server.on("listening", () => appendFileSync(log, "listening\n"));
server.on("error", () => setTimeout(() => server.listen(Number(port), "127.0.0.1"), 1));
server.listen(Number(port), "127.0.0.1");
writeFileSync(`${log}.ready`, "");
process.stdin.on("end", () => process.exit(0));
process.stdin.on("close", () => process.exit(0));
process.stdin.resume();
