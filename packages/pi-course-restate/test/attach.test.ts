/**
 * `attach` waits past a response whose headers do not come in time: a local server holds the first
 * request open without answering and answers the second; with an attempt of 200 ms the answer of
 * the second comes back. Also: it gives up after `maxWaitMs` saying so, and stops on its signal.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { attach } from "../src/attach.js";

let server: http.Server;
let url: string;
let requests = 0;
/** Requests answered only on the server's close. */
const held: http.ServerResponse[] = [];

beforeAll(async () => {
  server = http.createServer((request, response) => {
    requests += 1;
    if (request.url === "/never" || requests === 1) {
      held.push(response);
      return;
    }
    response.end('{"done":true}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const response of held) response.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

it("attaches again when an attempt gets no headers in time", async () => {
  const answer = await attach(`${url}/attach`, { attemptMs: 200, signal: AbortSignal.timeout(5000) });
  expect(answer).toEqual({ ok: true, status: 200, text: '{"done":true}' });
  expect(requests).toBe(2);
}, 10_000);

it("gives up after maxWaitMs, saying so, and stops on its signal", async () => {
  await expect(attach(`${url}/never`, { attemptMs: 100, maxWaitMs: 350 })).rejects.toThrow(/no answer .* in 350 ms/);
  const stop = AbortSignal.timeout(150);
  await expect(attach(`${url}/never`, { attemptMs: 1000, signal: stop })).rejects.toThrow();
  expect(stop.aborted).toBe(true);
}, 10_000);
