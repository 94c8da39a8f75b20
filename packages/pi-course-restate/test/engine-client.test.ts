/**
 * The client's side of the engine without an engine: an address that does not answer is an error
 * that names it and says what to do (never a bare `fetch failed`), a wrong token is said to be one,
 * a credential file other users can read is refused, and a waiting client gives up on an engine
 * that stays away after `reconnectMs`, saying the same.
 */
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { attach } from "../src/attach.js";
import { readConnection } from "../src/engine-client.js";
import { freePort } from "../src/restate-server.js";
import { submitRun } from "../src/submit.js";

let dir: string;
let refusing: http.Server;
let refusingUrl: string;
/** The authorization headers the refusing server got. */
const sent: (string | undefined)[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-restate-client-"));
  refusing = http.createServer((request, response) => {
    sent.push(request.headers.authorization);
    response.writeHead(401).end();
  });
  await new Promise<void>((resolve) => refusing.listen(0, "127.0.0.1", resolve));
  refusingUrl = `http://127.0.0.1:${(refusing.address() as AddressInfo).port}`;
});

afterAll(async () => {
  refusing.closeAllConnections();
  await new Promise((resolve) => refusing.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

it("says which engine does not answer and what to do, never a bare `fetch failed`", async () => {
  const url = `http://127.0.0.1:${await freePort()}`;
  await expect(submitRun({ url, token: "t" }, "r1", { setup: "demo", prompt: "hi" })).rejects.toThrow(
    `cannot reach the engine at ${url} (ECONNREFUSED): is \`pi-course-restate engine\` running with that folder? ` +
      "If it is restarting, try again in a moment.",
  );
  await expect(attach(`${url}/restate/workflow/AgentRun/r1/attach`, { reconnectMs: 300 })).rejects.toThrow(
    `cannot reach the engine at ${url} (ECONNREFUSED)`,
  );
});

it("sends the credential to no listener that does not prove it holds it, and says so", async () => {
  // an engine of another folder (its own token), or any other listener on the port
  await expect(submitRun({ url: refusingUrl, token: "old" }, "r1", { setup: "demo", prompt: "hi" })).rejects.toThrow(
    `the listener at ${refusingUrl} did not prove it is the engine of this client.json ` +
      '(it answered the proof question with "HTTP/1.1 401 Unauthorized"); the credential was not sent to it. ' +
      "Either another engine runs there (a new engine folder makes a new credential: use its client.json), " +
      "or another program holds the port of an engine that is not running: start `pi-course-restate engine` with its folder again.",
  );
  expect(sent).toEqual([undefined]);
});

it("reads an engine's client.json from its folder, and refuses one other users can read", async () => {
  const file = path.join(dir, "client.json");
  await writeFile(file, JSON.stringify({ url: "http://127.0.0.1:1/", token: "abc" }), { mode: 0o600 });
  expect(await readConnection(dir)).toEqual({ url: "http://127.0.0.1:1", token: "abc" });
  await chmod(file, 0o644);
  await expect(readConnection(file)).rejects.toThrow(
    `${file} can be read by other users (mode 644); it is the engine's only key. Run \`chmod 600 ${file}\`.`,
  );
  await expect(readConnection("")).rejects.toThrow("which engine? Give --engine DIR");
});
