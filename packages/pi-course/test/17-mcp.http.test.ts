/**
 * Chapter 17 over Streamable HTTP (Lab 17.6): the transport alone against a server of the test
 * that records every request (what each POST carries, how each kind of answer is delivered, the
 * DELETE at close); then the whole client against server-everything's `streamableHttp` mode on
 * 127.0.0.1 (a real process, a real port), and against small HTTP servers of the test for the
 * failures the reference server does not produce on demand.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { McpClient } from "../src/mcp/client.js";
import { HttpTransport } from "../src/mcp/streamable-http.js";
import type { HttpAuth } from "../src/mcp/auth/http-auth.js";
import type { JsonRpcMessage, McpError } from "../src/mcp/json-rpc.js";
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

describe("Streamable HTTP: the transport alone", () => {
  let server: Server;
  let base: string;
  /** Every request the server got: method, headers, body. */
  const seen: { method: string; headers: IncomingHttpHeaders; body: string }[] = [];
  /** How the server answers a POST (the parsed message), set by each test. */
  let answer: (message: { id?: number; method?: string }, response: ServerResponse) => void = (_m, response) =>
    void response.writeHead(500).end();
  /** How the server answers a DELETE. */
  const deleted = (response: ServerResponse) => void response.writeHead(200).end();
  let answerDelete = deleted;

  beforeAll(async () => {
    server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => (body += chunk));
      request.on("end", () => {
        seen.push({ method: request.method!, headers: request.headers, body });
        if (request.method === "DELETE") return answerDelete(response);
        if (request.method !== "POST") return void response.writeHead(405).end();
        answer(JSON.parse(body), response);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  });
  afterAll(async () => {
    server.closeAllConnections(); // a response a failing test left open must not hold up the end
    await new Promise((resolve) => server.close(resolve));
  });

  /** A started transport and what it delivered. */
  async function open(headers?: Record<string, string>, auth?: HttpAuth) {
    const transport = new HttpTransport({
      url: base,
      ...(headers !== undefined && { headers }),
      ...(auth !== undefined && { auth }),
    });
    const got: JsonRpcMessage[] = [];
    const diagnostics: string[] = [];
    const closed: string[] = [];
    await transport.start({
      onMessage: (message) => got.push(message),
      onClose: (error) => closed.push(error.message),
      onDiagnostic: (text) => diagnostics.push(text),
    });
    return { transport, got, diagnostics, closed };
  }
  const json = (response: ServerResponse, value: unknown, headers: Record<string, string> = {}) =>
    void response.writeHead(200, { "content-type": "application/json", ...headers }).end(JSON.stringify(value));
  const initialized = { protocolVersion: "2025-11-25", capabilities: {}, serverInfo: { name: "t", version: "1" } };

  it("Lab 17.6 · JSON answers are delivered; the session the server names goes on every later request with the protocol version; Accept names both kinds", async () => {
    seen.length = 0;
    answer = (message, response) => {
      if (message.method === "initialize")
        return json(response, { jsonrpc: "2.0", id: message.id, result: initialized }, { "mcp-session-id": "s-1" });
      if (message.id === undefined) return void response.writeHead(202).end();
      // a batch: one response, and one item that is no JSON-RPC message
      json(response, [{ jsonrpc: "2.0", id: message.id, result: { tools: [] } }, { hello: "world" }]);
    };
    const { transport, got, diagnostics } = await open({ "x-team": "a" });
    await transport.send({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} });
    expect(got).toEqual([{ jsonrpc: "2.0", id: 1, result: initialized }]);
    expect(transport.session).toBe("s-1");
    transport.protocolVersion = "2025-11-25"; // the client sets it from initialize's answer
    await transport.send({ jsonrpc: "2.0", method: "notifications/roots/list_changed" }); // 202: nothing to deliver
    await transport.send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    expect(got).toEqual([
      { jsonrpc: "2.0", id: 1, result: initialized },
      { jsonrpc: "2.0", id: 2, result: { tools: [] } },
    ]);
    expect(diagnostics).toEqual(['dropped a message that is not JSON-RPC (no "jsonrpc": "2.0")']);
    const [first, ...later] = seen;
    expect(first!.headers.accept).toBe("application/json, text/event-stream");
    expect(first!.headers["content-type"]).toBe("application/json");
    expect(first!.headers["x-team"]).toBe("a");
    expect(first!.headers["mcp-session-id"]).toBeUndefined();
    expect(first!.headers["mcp-protocol-version"]).toBeUndefined(); // not known before initialize's answer
    expect(
      later.map((request) => [
        request.method,
        request.headers["mcp-session-id"],
        request.headers["mcp-protocol-version"],
      ]),
    ).toEqual([
      ["POST", "s-1", "2025-11-25"],
      ["POST", "s-1", "2025-11-25"],
    ]);
    await transport.close();
  });

  it("Lab 17.6 · a notification answered 200 with no body or 204, and a request answered 202, deliver nothing: send resolves", async () => {
    answer = (message, response) => {
      if (message.method === "initialize")
        return json(response, { jsonrpc: "2.0", id: message.id, result: initialized }, { "mcp-session-id": "s-5" });
      if (message.method === "notifications/a") return void response.writeHead(200).end();
      if (message.method === "notifications/b") return void response.writeHead(204).end();
      response.writeHead(202).end();
    };
    const { transport, got, diagnostics } = await open();
    await transport.send({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} });
    await transport.send({ jsonrpc: "2.0", method: "notifications/a" });
    await transport.send({ jsonrpc: "2.0", method: "notifications/b" });
    await transport.send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    expect([got, diagnostics]).toEqual([[{ jsonrpc: "2.0", id: 1, result: initialized }], []]);
    await transport.close();
  });

  it("Lab 17.6 · handlers without onDiagnostic: a batch item that is no JSON-RPC message is dropped, the rest delivered", async () => {
    answer = (message, response) =>
      json(response, [{ jsonrpc: "2.0", id: message.id, result: { tools: [] } }, { hello: "world" }]);
    const transport = new HttpTransport({ url: base });
    const got: JsonRpcMessage[] = [];
    await transport.start({ onMessage: (message) => got.push(message), onClose: () => {} });
    await transport.send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    expect(got).toEqual([{ jsonrpc: "2.0", id: 1, result: { tools: [] } }]);
    await transport.close();
  });

  it("Lab 17.6 · an event-stream answer: its messages in order, a notification before the answer; send resolves once the request is accepted, before the stream ends", async () => {
    let finish!: () => void;
    answer = (message, response) => {
      if (message.method === "initialize")
        return json(response, { jsonrpc: "2.0", id: message.id, result: initialized }, { "mcp-session-id": "s-2" });
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write(
        `event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } })}\n\n`,
      );
      finish = () =>
        response.end(
          `event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: message.id, result: { ok: true } })}\n\n`,
        );
    };
    const { transport, got } = await open();
    await transport.send({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} });
    await transport.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "slow" } });
    // send has resolved while the stream is still open; its first event is delivered as it comes
    for (let i = 0; i < 100 && got.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(got.at(-1)).toEqual({
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: { progressToken: 1, progress: 1 },
    });
    finish();
    for (let i = 0; i < 100 && got.length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(got.slice(1)).toEqual([
      { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } },
      { jsonrpc: "2.0", id: 2, result: { ok: true } },
    ]);
    await transport.close();
  });

  it("Lab 17.6 · a body that is not JSON fails the send with what it was; an HTTP error fails it with the status and the server's words", async () => {
    answer = (message, response) => {
      if (message.method === "initialize")
        return void response.writeHead(200, { "content-type": "application/json" }).end("<html>busy</html>");
      response.writeHead(503, { "content-type": "application/json" });
      response.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32603, message: "try later" } }));
    };
    const { transport, got } = await open();
    await expect(transport.send({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} })).rejects.toThrow(
      'the server answered with a body that is not JSON: "<html>busy</html>"',
    );
    await expect(transport.send({ jsonrpc: "2.0", id: 2, method: "tools/list" })).rejects.toThrow(
      "the server answered tools/list with HTTP 503: try later",
    );
    expect(got).toEqual([]);
    await transport.close();
  });

  it("Lab 17.6 · a long body that is not JSON is quoted up to its first 200 characters", async () => {
    answer = (_message, response) =>
      void response.writeHead(200, { "content-type": "application/json" }).end(`${"y".repeat(200)}${"z".repeat(100)}`);
    const { transport } = await open();
    const error = await transport.send({ jsonrpc: "2.0", id: 1, method: "tools/list" }).catch((e: Error) => e);
    expect((error as Error).message).toBe(`the server answered with a body that is not JSON: "${"y".repeat(200)}"`);
    await transport.close();
  });

  it("Lab 17.6 · close deletes the session (DELETE with its id) once, and ends the transport once; without a session nothing is sent", async () => {
    seen.length = 0;
    answer = (message, response) =>
      json(response, { jsonrpc: "2.0", id: message.id, result: initialized }, { "mcp-session-id": "s-3" });
    const { transport, closed } = await open();
    await transport.send({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} });
    await transport.close();
    await transport.close();
    expect(seen.map((request) => [request.method, request.headers["mcp-session-id"]])).toEqual([
      ["POST", undefined],
      ["DELETE", "s-3"],
    ]);
    expect(closed).toEqual(["the connection was closed"]);
    await expect(transport.send({ jsonrpc: "2.0", id: 2, method: "ping" })).rejects.toThrow(
      "the HTTP transport is closed",
    );
    seen.length = 0;
    const fresh = await open();
    await fresh.transport.close();
    expect([seen, fresh.closed]).toEqual([[], ["the connection was closed"]]);
  });

  it("Lab 17.6 · close sends the DELETE with the last Authorization sent (it asks the auth for none), as a GET accepts; a transport never started closes quietly", async () => {
    seen.length = 0;
    answer = (message, response) =>
      json(response, { jsonrpc: "2.0", id: message.id, result: initialized }, { "mcp-session-id": "s-6" });
    let asked = 0;
    const auth: HttpAuth = {
      authorization: async () => `Bearer ${++asked}`,
      unauthorized: async () => {},
      forbidden: async () => false,
    };
    const { transport } = await open(undefined, auth);
    await transport.send({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} });
    await transport.close();
    expect(seen.map((request) => [request.method, request.headers.authorization, request.headers.accept])).toEqual([
      ["POST", "Bearer 1", "application/json, text/event-stream"],
      ["DELETE", "Bearer 1", "text/event-stream"],
    ]);
    expect(asked).toBe(1);
    await expect(new HttpTransport({ url: base }).close()).resolves.toBeUndefined();
  });

  it("Lab 17.6 · close lets go of the DELETE answer's body: a body the server never ends does not keep the connection", async () => {
    let ended!: Promise<void>;
    answerDelete = (response) => {
      ended = new Promise((resolve) => response.once("close", () => resolve()));
      response.writeHead(200, { "content-type": "text/plain" }).write("deleted, and more to come");
    };
    try {
      answer = (message, response) =>
        json(response, { jsonrpc: "2.0", id: message.id, result: initialized }, { "mcp-session-id": "s-7" });
      // the test keeps every response, so only the transport can let go of the body (not the GC)
      const responses: Response[] = [];
      const keeping: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        responses.push(response);
        return response;
      };
      const transport = new HttpTransport({ url: base, fetch: keeping });
      const closed: string[] = [];
      await transport.start({ onMessage: () => {}, onClose: (error) => closed.push(error.message) });
      await transport.send({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} });
      await transport.close();
      expect([responses.length, closed]).toEqual([2, ["the connection was closed"]]);
      await ended; // the client cancelled the body, so the server's response closes
    } finally {
      answerDelete = deleted;
    }
  });
});

describe("Streamable HTTP against server-everything", () => {
  it("Lab 17.6 · initialize, tools/list, a call with progress on the POST stream, roots/list on the GET stream, DELETE on close", async () => {
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

  it("Lab 17.6 · a lost session is answered by one new initialize, and the call goes through", async () => {
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

  it("Lab 17.6 · a POST answer larger than maxResponseBytes ends the call with an error that says so, as JSON or as an endless event stream", async () => {
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

  it("Lab 17.6 · an HTTP error, a stream that ends without the answer, and a refused connection each end the call with an error that says why", async () => {
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
