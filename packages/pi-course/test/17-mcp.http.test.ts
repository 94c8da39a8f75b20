/**
 * Chapter 17 over Streamable HTTP: the same client against server-everything's `streamableHttp`
 * mode on 127.0.0.1 (a real process, a real port), and against small HTTP servers of the test
 * for the failures the reference server does not produce on demand.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { McpClient } from "../src/mcp/client.js";
import { HttpTransport } from "../src/mcp/streamable-http.js";
import type { McpError } from "../src/mcp/json-rpc.js";
import { serverEntry } from "./support/mcp.js";

let child: ChildProcess;
let url: string;
const requests: string[] = [];

/** A free port on 127.0.0.1. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

beforeAll(async () => {
  const port = await freePort();
  url = `http://127.0.0.1:${port}/mcp`;
  child = spawn(process.execPath, [serverEntry("server-everything"), "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.resume();
  child.stderr!.resume();
  // ready once the port answers
  // up to a minute: the server imports the SDK, express and zod, seconds on a loaded machine
  for (let i = 0; i < 1100; i++) {
    const ok = await fetch(url, { method: "GET" }).then(
      () => true,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("server-everything did not start listening within 55 s");
}, 60_000);

afterAll(async () => {
  child.kill("SIGTERM");
  await new Promise((resolve) => child.once("close", resolve));
});

/** A fetch that records `METHOD status` of every exchange. */
const recording: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  requests.push(`${init?.method ?? "GET"} ${response.status}`);
  return response;
};

describe("Streamable HTTP against server-everything", () => {
  it("Lab 17.3 · initialize, tools/list, a call with progress on the POST stream, roots/list on the GET stream, DELETE on close", async () => {
    requests.length = 0;
    const transport = new HttpTransport({ url, fetch: recording });
    const changed: number[] = [];
    const diagnostics: string[] = [];
    const client = new McpClient(transport, {
      roots: [{ uri: "file:///workspace", name: "workspace" }],
      onToolsChanged: (tools) => changed.push(tools.length),
      onDiagnostic: (text) => diagnostics.push(text),
    });
    const info = await client.connect({ timeoutMs: 10_000 });
    expect(info.protocolVersion).toBe("2025-11-25");
    expect(transport.session).toMatch(/^[0-9a-f-]{36}$/);
    const tools = await client.listTools();
    expect(tools.map((t) => t.name)).toContain("get-roots-list");
    const progress: number[] = [];
    const result = await client.callTool(
      "trigger-long-running-operation",
      { duration: 0.3, steps: 3 },
      { onProgress: (p) => progress.push(p.progress) },
    );
    expect(result.content).toEqual([
      { type: "text", text: "Long running operation completed. Duration: 0.3 seconds, Steps: 3." },
    ]);
    expect(progress).toEqual([1, 2, 3]);
    // the server asked for roots/list on the GET stream and logged what it got
    for (let i = 0; i < 100 && !diagnostics.some((d) => d.includes("Roots updated")); i++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(diagnostics.some((d) => d.includes("Roots updated: 1 root(s) received from client"))).toBe(true);
    const roots = await client.callTool("get-roots-list", {});
    expect(JSON.stringify(roots.content)).toContain("file:///workspace");
    expect(changed.length).toBe(1);
    await client.close();
    expect(requests.slice(0, 3)).toEqual(["POST 200", "GET 200", "POST 202"]);
    expect(requests.at(-1)).toBe("DELETE 200");
    expect(await client.ping().catch((e: McpError) => e.kind)).toBe("closed");
  }, 30_000);

  it("Lab 17.3 · a lost session is answered by one new initialize, and the call goes through", async () => {
    const transport = new HttpTransport({ url });
    const diagnostics: string[] = [];
    const client = new McpClient(transport, { onDiagnostic: (text) => diagnostics.push(text) });
    await client.connect({ timeoutMs: 10_000 });
    const first = transport.session!;
    // the session ends behind the client's back
    await fetch(url, { method: "DELETE", headers: { "mcp-session-id": first, "mcp-protocol-version": "2025-11-25" } });
    expect((await client.callTool("echo", { message: "again" })).content).toEqual([
      { type: "text", text: "Echo: again" },
    ]);
    expect(transport.session).not.toBe(first);
    expect(diagnostics).toContain("the server lost the session; initializing a new one");
    await client.close();
  }, 30_000);
});

describe("Streamable HTTP failures", () => {
  let server: Server;
  let base: string;
  let mode: "500" | "cut" | "huge json" | "huge stream" = "500";

  beforeAll(async () => {
    server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => (body += chunk));
      request.on("end", () => {
        if (request.method !== "POST") return void response.writeHead(405).end();
        const message = JSON.parse(body) as { id?: number; method: string };
        if (message.method === "initialize") {
          response.writeHead(200, { "content-type": "application/json", "mcp-session-id": "s1" });
          return void response.end(
            JSON.stringify({
              jsonrpc: "2.0",
              id: message.id,
              result: { protocolVersion: "2025-06-18", capabilities: {}, serverInfo: { name: "t", version: "1" } },
            }),
          );
        }
        if (message.id === undefined) return void response.writeHead(202).end();
        if (mode === "500") {
          response.writeHead(500, { "content-type": "application/json" });
          return void response.end(
            JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32603, message: "database is down" } }),
          );
        }
        const huge = "x".repeat(64 * 1024);
        if (mode === "huge json") {
          // an answer of ~2 MiB, written piece by piece
          response.writeHead(200, { "content-type": "application/json" });
          response.write(`{"jsonrpc":"2.0","id":${message.id},"result":{"content":[{"type":"text","text":"`);
          for (let i = 0; i < 32; i++) response.write(huge);
          return void response.end('"}]}}');
        }
        if (mode === "huge stream") {
          // progress events without end: only the cap stops them
          response.writeHead(200, { "content-type": "text/event-stream" });
          const more = () => {
            if (response.destroyed) return;
            response.write(
              `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"debug","data":"${huge}"}}\n\n`,
              () => setImmediate(more),
            );
          };
          return more();
        }
        // an event stream that ends without the answer
        response.writeHead(200, { "content-type": "text/event-stream" });
        response.end(
          'id: 1\ndata: \n\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}\n\n',
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it("Lab 17.3 · a POST answer larger than maxResponseBytes ends the call with an error that says so, as JSON or as an endless event stream", async () => {
    const client = new McpClient(new HttpTransport({ url: base, maxResponseBytes: 1024 * 1024 }));
    await client.connect();
    const tooLarge = "the response passed maxResponseBytes (1048576 bytes after decompression); the rest was not read";
    mode = "huge json";
    expect(await client.callTool("x", {}).catch((e: McpError) => e.message)).toBe(
      `cannot send tools/call: ${tooLarge}`,
    );
    mode = "huge stream";
    expect(await client.callTool("x", {}).catch((e: McpError) => e.message)).toBe(
      `tools/call failed: MCP error -32000: the response stream broke before the answer: ${tooLarge}`,
    );
    await client.close();
  }, 30_000);

  it("Lab 17.3 · an HTTP error, a stream that ends without the answer, and a refused connection each end the call with an error that says why", async () => {
    const client = new McpClient(new HttpTransport({ url: base }));
    expect((await client.connect()).protocolVersion).toBe("2025-06-18");
    mode = "500";
    expect(await client.ping().catch((e: McpError) => [e.kind, e.message])).toEqual([
      "transport",
      "cannot send ping: the server answered ping with HTTP 500: database is down",
    ]);
    mode = "cut";
    expect(await client.callTool("x", {}).catch((e: McpError) => [e.kind, e.message])).toEqual([
      "remote",
      // it gave an event id, so the client tried to read on from it: this server offers no GET (405)
      "tools/call failed: MCP error -32000: the server ended the response stream before answering; resuming it failed: the server answered the GET with HTTP 405",
    ]);
    expect(client.diagnostics).toEqual(["[info] working"]);
    await client.close();

    const port = await freePort();
    const refused = new McpClient(new HttpTransport({ url: `http://127.0.0.1:${port}/mcp` }));
    expect(await refused.connect().catch((e: McpError) => e.message)).toBe(
      `cannot send initialize: cannot reach the MCP server at http://127.0.0.1:${port}/mcp: ECONNREFUSED`,
    );
  }, 30_000);
});
