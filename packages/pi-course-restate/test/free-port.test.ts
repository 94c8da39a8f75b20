/**
 * `freePort` picks a port below the system's ephemeral range, so the local port of an outgoing
 * connection cannot take it between the pick and the listen (CI saw a worker's EADDRINUSE that way).
 */
import { readFileSync } from "node:fs";
import net from "node:net";
import { expect, it } from "vitest";
import { freePort } from "../src/restate-server.js";

it("gives a port below the ephemeral range that a listener then gets", async () => {
  const ephemeral = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
  const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
  for (const port of ports) {
    expect(port).toBeGreaterThanOrEqual(10_000);
    expect(port).toBeLessThan(ephemeral);
  }
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(ports[0], "127.0.0.1", () => resolve());
  });
  expect((server.address() as net.AddressInfo).port).toBe(ports[0]);
  await new Promise((resolve) => server.close(resolve));
});
