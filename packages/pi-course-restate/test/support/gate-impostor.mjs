// A listener ANOTHER local user (`runuser -u nobody`) puts on a stopped engine's gate port, run by
// `restate.gate-port.test.ts`. Plain Node, no packages. Arguments: PORT LOG.
// It keeps every byte a client sends it in LOG, and answers every request it gets with a
// made-up proof (200, 43 characters), as one that tries to pass for the gate would.
// LOG.ready says it listens. It exits when its standard input ends.
import { appendFileSync, writeFileSync } from "node:fs";
import net from "node:net";

const [port, log] = process.argv.slice(2);
writeFileSync(log, "");
const forged = "A".repeat(43);
const server = net.createServer((client) => {
  let seen = "";
  client.on("error", () => undefined);
  client.on("data", (chunk) => {
    appendFileSync(log, chunk);
    seen += chunk.toString("latin1");
    while (seen.includes("\r\n\r\n")) {
      seen = seen.slice(seen.indexOf("\r\n\r\n") + 4);
      client.write(`HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: ${forged.length}\r\n\r\n${forged}`);
    }
  });
});
server.listen(Number(port), "127.0.0.1", () => writeFileSync(`${log}.ready`, ""));
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
