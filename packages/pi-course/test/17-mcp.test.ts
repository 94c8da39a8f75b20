/**
 * Chapter 17: an MCP client written by hand, proven against servers nobody here wrote.
 * Framing (17.1), correlation (17.2), lifecycle and the stdio transport (17.3), MCP tools as agent
 * tools (17.4), configuration (17.5). The real servers are the reference servers
 * `@modelcontextprotocol/server-everything` and `server-filesystem`; faults come from a server
 * written with the official SDK's `McpServer` (test/fixtures/mcp/fault-server.mjs).
 */
import { getEventListeners } from "node:events";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { agentLoop } from "../src/agent/agent-loop.js";
import { killLiveProcessGroups } from "../src/coding-tools/processes.js";
import { parseArgs } from "../src/cli/args.js";
import { runMain } from "../src/cli/main.js";
import {
  McpConfigError,
  expandVariables,
  loadMcpConfig,
  parseMcpConfig,
  type McpServerConfig,
} from "../src/mcp/config.js";
import { McpServers } from "../src/mcp/servers.js";
import { McpClient } from "../src/mcp/client.js";
import { JsonRpcConnection } from "../src/mcp/connection.js";
import { McpError, readMessage, type JsonRpcMessage } from "../src/mcp/json-rpc.js";
import { LineDecoder, LineTooLongError } from "../src/mcp/line-decoder.js";
import { mapCallResult, mcpAgentTools, mcpToolName } from "../src/mcp/mcp-tools.js";
import { INHERITED_ENV, StdioTransport } from "../src/mcp/stdio-transport.js";
import { assistantMessage, userMessage } from "../src/messages.js";
import { ScriptedModel } from "../src/models/scripted-model.js";
import type { ToolResultMessage } from "../src/types.js";
import { FAULT_SERVER, MemoryTransport, serverEntry, wire } from "./support/mcp.js";

const clients: McpClient[] = [];
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-course-17-"));
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => {})));
  await rm(dir, { recursive: true, force: true });
});

/** A client of a stdio server, closed after the test. */
function stdioClient(
  args: string[],
  options: ConstructorParameters<typeof McpClient>[1] = {},
  transport: Partial<ConstructorParameters<typeof StdioTransport>[0]> = {},
) {
  const client = new McpClient(
    new StdioTransport({ command: process.execPath, args, graceMs: 500, ...transport }),
    options,
  );
  clients.push(client);
  return client;
}

const everything = () => [serverEntry("server-everything"), "stdio"];

describe("framing: one JSON-RPC message per line", () => {
  it("Lab 17.1 · readMessage tells requests, notifications and responses apart, in any key order, and says why anything else is not one", () => {
    expect(readMessage({ result: {}, jsonrpc: "2.0", id: 0 })).toEqual({ result: {}, jsonrpc: "2.0", id: 0 });
    expect(readMessage({ jsonrpc: "2.0", id: "a", method: "ping" })).toEqual({
      jsonrpc: "2.0",
      id: "a",
      method: "ping",
    });
    expect(readMessage({ jsonrpc: "2.0", method: "notifications/initialized" })).toEqual({
      jsonrpc: "2.0",
      method: "notifications/initialized",
    });
    expect(readMessage({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "Bad Request" } })).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32000, message: "Bad Request" },
    });
    expect(readMessage([{ jsonrpc: "2.0", method: "ping", id: 1 }])).toBe(
      "a batch (array); MCP sends one message per line",
    );
    expect(readMessage({ method: "ping", id: 1 })).toBe('no "jsonrpc": "2.0"');
    expect(readMessage({ jsonrpc: "2.0", method: "ping", id: null })).toBe(
      "an id that is neither a number nor a string (null)",
    );
    expect(readMessage({ jsonrpc: "2.0", id: 1 })).toBe('a response needs exactly one of "result" and "error"');
    expect(readMessage({ jsonrpc: "2.0", id: 1, result: {}, error: { code: 1, message: "x" } })).toBe(
      'a response needs exactly one of "result" and "error"',
    );
    expect(readMessage({ jsonrpc: "2.0", id: 1, error: "boom" })).toBe(
      'an "error" without a numeric code and a message',
    );
    expect(readMessage("text")).toBe("not a JSON object");
  });

  it("Lab 17.1 · readMessage refuses each malformed message with its reason: ids, params, responses without an id, error and result shapes", () => {
    const cases: [unknown, string | JsonRpcMessage][] = [
      // an id is a number or a string; null only in an error response
      [
        { jsonrpc: "2.0", id: true, error: { code: 1, message: "x" } },
        "an id that is neither a number nor a string (true)",
      ],
      [{ jsonrpc: "2.0", id: { a: 1 }, result: {} }, 'an id that is neither a number nor a string ({"a":1})'],
      [{ jsonrpc: "2.0", id: null, result: {} }, "an id that is neither a number nor a string (null)"],
      // params, when present, are an object
      [{ jsonrpc: "2.0", id: 1, method: "tools/list", params: 5 }, "params that are not an object"],
      [{ jsonrpc: "2.0", method: "notifications/progress", params: null }, "params that are not an object"],
      [{ jsonrpc: "2.0", method: "notifications/progress", params: "x" }, "params that are not an object"],
      [
        { jsonrpc: "2.0", id: 0, method: "tools/list", params: { cursor: "c" } },
        { jsonrpc: "2.0", id: 0, method: "tools/list", params: { cursor: "c" } },
      ],
      // neither a request nor a response
      [{ jsonrpc: "2.0", result: {} }, 'neither a "method" nor an "id"'],
      // an error has a numeric code and a string message
      [{ jsonrpc: "2.0", id: 1, error: null }, 'an "error" without a numeric code and a message'],
      [{ jsonrpc: "2.0", id: 1, error: 7 }, 'an "error" without a numeric code and a message'],
      [
        { jsonrpc: "2.0", id: 1, error: { code: "1", message: "x" } },
        'an "error" without a numeric code and a message',
      ],
      [{ jsonrpc: "2.0", id: 1, error: { code: 1 } }, 'an "error" without a numeric code and a message'],
      [{ jsonrpc: "2.0", id: 1, error: { message: "x" } }, 'an "error" without a numeric code and a message'],
      [{ jsonrpc: "2.0", id: 1, error: { code: 1, message: 2 } }, 'an "error" without a numeric code and a message'],
      // a result is an object
      [{ jsonrpc: "2.0", id: 1, result: null }, 'a "result" that is not an object'],
      [{ jsonrpc: "2.0", id: 1, result: 5 }, 'a "result" that is not an object'],
      [{ jsonrpc: "2.0", id: 1, result: "ok" }, 'a "result" that is not an object'],
      [
        { jsonrpc: "2.0", id: "7", result: { ok: true } },
        { jsonrpc: "2.0", id: "7", result: { ok: true } },
      ],
    ];
    for (const [value, expected] of cases) expect([value, readMessage(value)]).toEqual([value, expected]);
  });

  it("Lab 17.1 · LineDecoder joins lines split over chunks, splits chunks with several lines, drops a CR before LF, and keeps split UTF-8 whole", () => {
    const decoder = new LineDecoder();
    const bytes = Buffer.from('{"a":"é"}\r\n{"b":2}\n{"c":');
    // cut inside the two-byte é
    const cut = bytes.indexOf(0xc3) + 1;
    expect(decoder.push(bytes.subarray(0, cut))).toEqual([]);
    expect(decoder.push(bytes.subarray(cut))).toEqual(['{"a":"é"}', '{"b":2}']);
    expect(decoder.pending).toBe(5);
    expect(decoder.push(Buffer.from("3}\n\n"))).toEqual(['{"c":3}', ""]);
    expect(decoder.pending).toBe(0);
  });

  it("Lab 17.1 · LineDecoder refuses a line longer than its cap, in one chunk or many, with an error that says what to do", () => {
    const small = new LineDecoder(8);
    expect(small.push(Buffer.from("12345678\n"))).toEqual(["12345678"]);
    expect(() => small.push(Buffer.from("123456789\n"))).toThrow(LineTooLongError);
    // exactly the cap, held as an unfinished line, is still allowed
    const edge = new LineDecoder(8);
    expect(edge.push(Buffer.from("1234"))).toEqual([]);
    expect(edge.push(Buffer.from("5678"))).toEqual([]);
    expect(edge.push(Buffer.from("\n"))).toEqual(["12345678"]);
    const many = new LineDecoder(8);
    many.push(Buffer.from("12345"));
    expect(() => many.push(Buffer.from("6789"))).toThrow(
      "the server sent a line longer than 8 bytes without a newline; the stream cannot be read any further (raise maxLineBytes if the server really sends messages that big)",
    );
  });
});

describe("correlation: every request ends exactly once", () => {
  it("Lab 17.2 · ids start at 0, answers are matched by id in any order, and a peer error becomes a remote McpError", async () => {
    const transport = new MemoryTransport();
    const connection = new JsonRpcConnection(transport);
    await connection.start();
    const first = connection.request("a");
    const second = connection.request("b", { x: 1 });
    const third = connection.request("c");
    await Promise.resolve();
    expect(wire(transport.sent)).toEqual([
      { id: 0, method: "a", params: {} },
      { id: 1, method: "b", params: { x: 1 } },
      { id: 2, method: "c", params: {} },
    ]);
    transport.deliver({ jsonrpc: "2.0", id: 1, result: { b: true } });
    transport.deliver({ jsonrpc: "2.0", id: 0, result: { a: true } });
    transport.deliver({
      jsonrpc: "2.0",
      id: 2,
      error: { code: -32601, message: "Method not found", data: { m: "c" } },
    });
    transport.deliver({ jsonrpc: "2.0", id: 2, result: {} }); // a duplicate answer is ignored
    expect(await first).toEqual({ a: true });
    expect(await second).toEqual({ b: true });
    const error = await third.catch((e: McpError) => e);
    expect(error).toBeInstanceOf(McpError);
    expect([error.kind, error.code, error.message, error.data]).toEqual([
      "remote",
      -32601,
      "c failed: MCP error -32601: Method not found",
      { m: "c" },
    ]);
  });

  it("Lab 17.2 · an abort ends the request at once and tells the peer; progress and a late answer for it are ignored", async () => {
    const transport = new MemoryTransport();
    const connection = new JsonRpcConnection(transport);
    await connection.start();
    const controller = new AbortController();
    const seen: unknown[] = [];
    const call = connection.request(
      "tools/call",
      { name: "slow" },
      { signal: controller.signal, onProgress: (p) => seen.push(p) },
    );
    transport.deliver({
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: { progressToken: 0, progress: 1, total: 2 },
    });
    controller.abort("the user pressed Ctrl-C");
    const error = await call.catch((e: McpError) => e);
    expect([error.kind, error.code, error.message]).toEqual([
      "aborted",
      -32001,
      "tools/call was aborted: the user pressed Ctrl-C",
    ]);
    transport.deliver({
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: { progressToken: 0, progress: 2, total: 2 },
    });
    transport.deliver({ jsonrpc: "2.0", id: 0, result: { content: [] } });
    expect(seen).toEqual([{ progress: 1, total: 2 }]);
    expect(wire(transport.sent)).toEqual([
      { id: 0, method: "tools/call", params: { name: "slow", _meta: { progressToken: 0 } } },
      { method: "notifications/cancelled", params: { requestId: 0, reason: "the user pressed Ctrl-C" } },
    ]);
  });

  it("Lab 17.2 · an abort without a text reason says the caller aborted; an already aborted signal refuses the request unsent; no abort listener stays behind", async () => {
    // the peer answers every request but tools/call at once (so nothing here waits for a timeout)
    const transport = new MemoryTransport((message, reply) => {
      if ("id" in message && "method" in message && message.method !== "tools/call")
        reply({ jsonrpc: "2.0", id: message.id, result: {} });
    });
    const connection = new JsonRpcConnection(transport);
    await connection.start();
    const controller = new AbortController();
    const listening = () => getEventListeners(controller.signal, "abort").length;
    const answered = connection.request("a", {}, { signal: controller.signal });
    expect(listening()).toBe(1);
    expect(await answered).toEqual({});
    expect(listening()).toBe(0);
    const call = connection.request("tools/call", {}, { signal: controller.signal });
    controller.abort(); // the reason is a DOMException, not a text
    const error = await call.catch((e: McpError) => e);
    expect([error.kind, error.code, error.message]).toEqual([
      "aborted",
      -32001,
      "tools/call was aborted: the caller aborted the request",
    ]);
    expect(listening()).toBe(0);
    const early = await connection.request("b", {}, { signal: controller.signal }).catch((e: McpError) => e);
    expect(early).toBeInstanceOf(McpError);
    expect([(early as McpError).kind, (early as McpError).code, (early as McpError).message]).toEqual([
      "aborted",
      -32001,
      "b was aborted before it was sent",
    ]);
    expect(wire(transport.sent)).toEqual([
      { id: 0, method: "a", params: {} },
      { id: 1, method: "tools/call", params: {} },
      { method: "notifications/cancelled", params: { requestId: 1, reason: "the caller aborted the request" } },
    ]);
  });

  it("Lab 17.2 · a timeout ends the request, is restarted by progress, and cancels the request at the peer", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const transport = new MemoryTransport();
      const connection = new JsonRpcConnection(transport);
      await connection.start();
      let outcome: unknown = "still waiting";
      connection.request("tools/call", {}, { timeoutMs: 150, onProgress: () => {} }).then(
        () => (outcome = "answered"),
        (error: McpError) => (outcome = [error.kind, error.code, error.message]),
      );
      // progress every 100 ms keeps it alive past 150 ms
      for (let i = 0; i < 3; i++) {
        await vi.advanceTimersByTimeAsync(100);
        transport.deliver({
          jsonrpc: "2.0",
          method: "notifications/progress",
          params: { progressToken: 0, progress: i },
        });
      }
      await vi.advanceTimersByTimeAsync(149);
      expect(outcome, "149 ms after the last progress the request still waits").toBe("still waiting");
      await vi.advanceTimersByTimeAsync(1);
      expect(
        outcome,
        "150 ms after the last progress the request's own timeoutMs ends it (not the connection's default)",
      ).toEqual(["timeout", -32001, "tools/call timed out: no answer within 150 ms"]);
      expect(wire(transport.sent).at(-1)).toEqual({
        method: "notifications/cancelled",
        params: { requestId: 0, reason: "Request timed out after 150 ms" },
      });
    } finally {
      vi.useRealTimers();
    }
  });

  it("Lab 17.2 · progress cannot keep a request open past maxTotalMs; an ended request leaves no timer behind; a total past the timer's reach is no limit", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const transport = new MemoryTransport();
      const connection = new JsonRpcConnection(transport);
      await connection.start();
      const answered = connection.request("a", {}, { timeoutMs: 1000, onProgress: () => {} });
      expect(vi.getTimerCount()).toBe(2); // the timeout and the total time
      transport.deliver({ jsonrpc: "2.0", id: 0, result: { a: 1 } });
      expect(await answered).toEqual({ a: 1 });
      expect(vi.getTimerCount()).toBe(0);

      const seen: number[] = [];
      let outcome: unknown;
      connection
        .request("tools/call", {}, { timeoutMs: 100, maxTotalMs: 250, onProgress: (p) => seen.push(p.progress) })
        .then(
          (result) => (outcome = result),
          (error: McpError) => (outcome = [error.kind, error.code, error.message]),
        );
      // progress every 60 ms restarts the 100 ms timeout, but not the 250 ms in all
      for (let i = 1; i <= 5; i++) {
        await vi.advanceTimersByTimeAsync(60);
        transport.deliver({
          jsonrpc: "2.0",
          method: "notifications/progress",
          params: { progressToken: 1, progress: i },
        });
      }
      expect(outcome).toEqual([
        "timeout",
        -32001,
        "tools/call timed out: no answer within 250 ms in all, though progress kept coming",
      ]);
      expect(seen).toEqual([1, 2, 3, 4]);
      expect(vi.getTimerCount()).toBe(0);
      expect(wire(transport.sent).slice(1)).toEqual([
        { id: 1, method: "tools/call", params: { _meta: { progressToken: 1 } } },
        {
          method: "notifications/cancelled",
          params: { requestId: 1, reason: "Request timed out after 250 ms in all" },
        },
      ]);

      // 2^31 ms is past what a timer holds: no limit in all, only the timeout
      const long = connection.request("c", {}, { timeoutMs: 100, maxTotalMs: 2 ** 31, onProgress: () => {} });
      expect(vi.getTimerCount()).toBe(1);
      transport.deliver({ jsonrpc: "2.0", id: 2, result: { c: 1 } });
      expect(await long).toEqual({ c: 1 });
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("Lab 17.2 · a timeout or total time that is no duration refuses the request unsent, naming the setting; maxTotalMs counts only with onProgress", async () => {
    // the peer answers every request at once
    const transport = new MemoryTransport((message, reply) => {
      if ("id" in message && "method" in message) reply({ jsonrpc: "2.0", id: message.id, result: { ok: true } });
    });
    const connection = new JsonRpcConnection(transport);
    await connection.start();
    const refused = async (promise: Promise<unknown>) =>
      promise.then(
        (result) => result,
        (error: Error) => [error.name, error.message],
      );
    expect(await refused(connection.request("x", {}, { timeoutMs: -1 }))).toEqual([
      "RangeError",
      "the timeout of x (timeoutMs) must be a finite number of milliseconds ≥ 0, got -1",
    ]);
    expect(await refused(connection.request("y", {}, { maxTotalMs: Number.NaN, onProgress: () => {} }))).toEqual([
      "RangeError",
      "the total time of y (maxTotalMs) must be a finite number of milliseconds ≥ 0, got NaN",
    ]);
    expect(await connection.request("z", {}, { maxTotalMs: -1 })).toEqual({ ok: true });
    expect(wire(transport.sent).map((m) => (m as { method: string }).method)).toEqual(["z"]);
  });

  it("Lab 17.2 · the end of the transport ends every pending request with the reason; later requests are refused", async () => {
    const transport = new MemoryTransport();
    const connection = new JsonRpcConnection(transport);
    await connection.start();
    const pending = [connection.request("a"), connection.request("b")];
    transport.fail(new Error("the server process exited with code 3"));
    const errors = await Promise.all(pending.map((p) => p.catch((e: McpError) => [e.kind, e.message])));
    expect(errors).toEqual([
      ["closed", "a failed: the server process exited with code 3"],
      ["closed", "b failed: the server process exited with code 3"],
    ]);
    const later = await connection.request("c").catch((e: McpError) => e.message);
    expect(later).toBe("cannot send c: the connection is closed (the server process exited with code 3)");
  });

  it("Lab 17.2 · a message the transport cannot send ends its request at once with a transport error, not a timeout; the connection goes on", async () => {
    class Refusing extends MemoryTransport {
      override async send(message: JsonRpcMessage): Promise<void> {
        if ("method" in message && message.method === "broken") throw new Error("HTTP 500 Internal Server Error");
        return super.send(message);
      }
    }
    const transport = new Refusing();
    const connection = new JsonRpcConnection(transport);
    await connection.start();
    // A request that waited for its timeout would end as "timeout" after 1 s instead.
    const heard: unknown[] = [];
    const error = await connection
      .request("broken", {}, { timeoutMs: 1000, onProgress: (p) => heard.push(p) })
      .catch((e: McpError) => e);
    expect([error.kind, error.message]).toEqual(["transport", "cannot send broken: HTTP 500 Internal Server Error"]);
    // it is over: progress for its id is not heard
    transport.deliver({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 0, progress: 1 } });
    expect(heard).toEqual([]);
    const next = connection.request("ok");
    await Promise.resolve();
    transport.deliver({ jsonrpc: "2.0", id: 1, result: { fine: true } });
    expect(await next).toEqual({ fine: true });
  });

  it("Lab 17.2 · the peer's requests are answered: ping, a handler's result or error, and -32601 for an unknown method", async () => {
    const transport = new MemoryTransport();
    const connection = new JsonRpcConnection(transport);
    connection.setRequestHandler("roots/list", () => ({ roots: [{ uri: "file:///w" }] }));
    connection.setRequestHandler("boom", () => {
      throw new Error("no");
    });
    await connection.start();
    for (const [id, method] of [
      [0, "ping"],
      [1, "roots/list"],
      [2, "boom"],
      [3, "sampling/createMessage"],
    ] as const) {
      transport.deliver({ jsonrpc: "2.0", id, method });
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
    // answers go out as each is ready, in any order
    const answers = wire(transport.sent).sort((a, b) => (a as { id: number }).id - (b as { id: number }).id);
    expect(answers).toEqual([
      { id: 0, result: {} },
      { id: 1, result: { roots: [{ uri: "file:///w" }] } },
      { id: 2, error: { code: -32603, message: "no" } },
      { id: 3, error: { code: -32601, message: "Method not found: sampling/createMessage" } },
    ]);
  });
  it("Lab 17.2 · the peer's notifications reach their handler; one that throws becomes a diagnostic, an unknown one is ignored without a word", async () => {
    const diagnostics: string[] = [];
    const transport = new MemoryTransport();
    const connection = new JsonRpcConnection(transport, undefined, (text) => diagnostics.push(text));
    const heard: unknown[] = [];
    connection.setNotificationHandler("notifications/message", (params) => {
      heard.push(params);
      if (params.level === "error") throw new Error("boom");
    });
    await connection.start();
    transport.deliver({ jsonrpc: "2.0", method: "notifications/unknown", params: { x: 1 } });
    transport.deliver({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info" } });
    transport.deliver({ jsonrpc: "2.0", method: "notifications/message", params: { level: "error" } });
    transport.deliver({ jsonrpc: "2.0", method: "notifications/message" });
    expect(heard).toEqual([{ level: "info" }, { level: "error" }, {}]);
    expect(diagnostics).toEqual(["the handler of notifications/message failed: boom"]);
    // the connection goes on
    const next = connection.request("ping");
    transport.deliver({ jsonrpc: "2.0", id: 0, result: {} });
    expect(await next).toEqual({});
  });
});

describe("lifecycle and the stdio transport, against the reference servers", () => {
  it("Lab 17.3 · connect offers 2025-11-25 and refuses an answer with a version the SDK does not support", async () => {
    const answer = (version: string) =>
      new MemoryTransport((message, reply) => {
        if ("method" in message && message.method === "initialize" && "id" in message) {
          reply({
            jsonrpc: "2.0",
            id: message.id,
            result: { protocolVersion: version, capabilities: {}, serverInfo: { name: "s", version: "1" } },
          });
        }
      });
    const old = answer("2024-11-05");
    const client = new McpClient(old, { clientInfo: { name: "test", version: "1" } });
    expect((await client.connect()).protocolVersion).toBe("2024-11-05");
    expect(wire(old.sent)).toEqual([
      {
        id: 0,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "test", version: "1" } },
      },
      { method: "notifications/initialized" },
    ]);
    const future = answer("2099-01-01");
    const refused = await new McpClient(future).connect().catch((e: Error) => e.message);
    expect(refused).toBe(
      'the server answered initialize with protocol version "2099-01-01", which this client does not support (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05, 2024-10-07); upgrade the server or the client',
    );
    expect(future.closed).toBe(true);
  });

  it("Lab 17.3 · listTools follows nextCursor until there is none", async () => {
    const pages: Record<string, unknown> = {
      "": { tools: [{ name: "a", inputSchema: { type: "object" } }], nextCursor: "p2" },
      p2: { tools: [{ name: "b", inputSchema: { type: "object" } }], nextCursor: "p3" },
      p3: { tools: [{ name: "c", inputSchema: { type: "object" } }] },
    };
    const transport = new MemoryTransport((message, reply) => {
      if (!("method" in message) || !("id" in message)) return;
      if (message.method === "initialize") {
        reply({
          jsonrpc: "2.0",
          id: message.id,
          result: {
            protocolVersion: "2025-11-25",
            capabilities: { tools: {} },
            serverInfo: { name: "s", version: "1" },
          },
        });
      } else if (message.method === "tools/list") {
        const cursor = (message.params?.cursor as string | undefined) ?? "";
        reply({ jsonrpc: "2.0", id: message.id, result: pages[cursor] as Record<string, unknown> });
      }
    });
    const client = new McpClient(transport);
    await client.connect();
    expect((await client.listTools()).map((t) => t.name)).toEqual(["a", "b", "c"]);
    expect(
      transport.sent
        .filter((m) => "method" in m && m.method === "tools/list")
        .map((m) => ("params" in m ? m.params : undefined)),
    ).toEqual([{}, { cursor: "p2" }, { cursor: "p3" }]);
  });

  it("Lab 17.3 · server-everything over stdio: initialize, tools/list, ping, tools/call, close (the process exits)", async () => {
    const client = stdioClient(everything());
    const info = await client.connect({ timeoutMs: 20_000 });
    expect(info.protocolVersion).toBe("2025-11-25");
    expect(info.serverInfo.name).toBe("mcp-servers/everything");
    const tools = await client.listTools();
    expect(tools.map((t) => t.name)).toContain("echo");
    await client.ping();
    expect(await client.callTool("echo", { message: "héllo" })).toEqual({
      content: [{ type: "text", text: "Echo: héllo" }],
    });
    const transport = client.transport as StdioTransport;
    await client.close();
    expect(transport.stderrTail).toContain("Starting default (STDIO) server...");
    const error = await client.ping().catch((e: McpError) => e.kind);
    expect(error).toBe("closed");
  }, 30_000);

  it("Lab 17.3 · roots/list is answered with the workspace root, and list_changed re-lists the tools once for a burst", async () => {
    const root = path.join(dir, "root");
    await mkdir(root);
    await writeFile(path.join(root, "hello.txt"), "hello from the root\n");
    const lists: string[][] = [];
    const client = stdioClient([serverEntry("server-filesystem")], {
      roots: [{ uri: `file://${root}`, name: "workspace" }],
      onToolsChanged: (tools) => lists.push(tools.map((t) => t.name)),
    });
    await client.connect({ timeoutMs: 20_000 });
    // filesystem asks for roots/list right after initialized and replaces its allowed folders with them
    let allowed = "";
    for (let i = 0; i < 50 && !allowed.includes(root); i++) {
      allowed = (await client.callTool("list_allowed_directories", {})).content
        .map((c) => ("text" in c ? c.text : ""))
        .join("");
      if (!allowed.includes(root)) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(allowed).toContain(root);
    const read = await client.callTool("read_text_file", { path: path.join(root, "hello.txt") });
    expect(read.content).toEqual([{ type: "text", text: "hello from the root\n" }]);

    // everything sends one list_changed per conditionally registered tool; the client lists once
    const lists2: number[] = [];
    const all = stdioClient(everything(), {
      roots: [{ uri: `file://${root}` }],
      onToolsChanged: (tools) => lists2.push(tools.length),
    });
    await all.connect({ timeoutMs: 20_000 });
    for (let i = 0; i < 100 && lists2.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(lists2).toEqual([(await all.listTools()).length]);
  }, 30_000);

  it("Lab 17.3 · a tool that never answers: abort and timeout end the call, and the server is told", async () => {
    const client = stdioClient([FAULT_SERVER]);
    await client.connect({ timeoutMs: 20_000 });
    const controller = new AbortController();
    const aborted = client.callTool("hang", {}, { signal: controller.signal });
    setTimeout(() => controller.abort("stop"), 50);
    expect(await aborted.catch((e: McpError) => [e.kind, e.message])).toEqual([
      "aborted",
      "tools/call was aborted: stop",
    ]);
    const timedOut = await client.callTool("hang", {}, { timeoutMs: 100 }).catch((e: McpError) => [e.kind, e.message]);
    expect(timedOut).toEqual(["timeout", "tools/call timed out: no answer within 100 ms"]);
    // the connection is still good
    expect((await client.callTool("slow", {})).content).toEqual([{ type: "text", text: "slow done" }]);
  }, 30_000);

  it("Lab 17.3 · a crash mid-call and an over-long line end the pending call with an error that says why; a stray line on stdout is skipped", async () => {
    const crash = stdioClient([FAULT_SERVER]);
    await crash.connect({ timeoutMs: 20_000 });
    expect(await crash.callTool("crash", {}).catch((e: McpError) => [e.kind, e.message])).toEqual([
      "closed",
      "tools/call failed: the server process exited with code 3 (last stderr line: fault-server ready)",
    ]);

    const garbage = stdioClient([FAULT_SERVER]);
    await garbage.connect({ timeoutMs: 20_000 });
    expect((await garbage.callTool("garbage", {})).content).toEqual([
      { type: "text", text: "answered after the stray line" },
    ]);
    expect(garbage.diagnostics).toContain(
      'skipped a line on stdout that is not JSON: "hello from a careless console.log" (an MCP server writes only JSON-RPC messages to stdout; logs go to stderr)',
    );

    const flood = stdioClient([FAULT_SERVER], {}, { maxLineBytes: 1024 * 1024 });
    await flood.connect({ timeoutMs: 20_000 });
    expect(await flood.callTool("flood", {}).catch((e: McpError) => e.message)).toBe(
      "tools/call failed: the server sent a line longer than 1 MiB without a newline; the stream cannot be read any further (raise maxLineBytes if the server really sends messages that big)",
    );
  }, 30_000);

  it("Lab 17.3 · a server that never answers initialize times out; one that cannot start says so", async () => {
    const mute = stdioClient(["-e", "process.stdin.resume()"]);
    const started = Date.now();
    expect(await mute.connect({ timeoutMs: 300 }).catch((e: McpError) => [e.kind, e.message])).toEqual([
      "timeout",
      "initialize timed out: no answer within 300 ms",
    ]);
    expect(Date.now() - started).toBeLessThan(3000);
    const missing = new McpClient(new StdioTransport({ command: "no-such-mcp-server-here" }));
    expect(await missing.connect().catch((e: Error) => e.message)).toBe(
      'cannot start "no-such-mcp-server-here": no such program (is it installed and on PATH?)',
    );
  }, 30_000);

  it("Lab 17.3 · close ends a server that ignores stdin close and SIGTERM (SIGKILL after the grace period)", async () => {
    // 500 ms of grace: time for the server to write its line after SIGTERM, on a loaded machine too.
    const client = stdioClient([FAULT_SERVER, "stubborn"], {}, { graceMs: 500 });
    await client.connect({ timeoutMs: 20_000 });
    const transport = client.transport as StdioTransport;
    const started = Date.now();
    await client.close();
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(1000);
    expect(took).toBeLessThan(6000);
    expect(transport.stderrTail).toContain("ignoring SIGTERM");
  }, 30_000);

  it("Lab 17.3 · connect declares the capabilities it has handlers for, names pi-course by default, passes its signal to initialize and refuses a bad version as a protocol error", async () => {
    const answering = () =>
      new MemoryTransport((message, reply) => {
        if ("method" in message && message.method === "initialize" && "id" in message) {
          reply({
            jsonrpc: "2.0",
            id: message.id,
            result: { protocolVersion: "2025-11-25", capabilities: {}, serverInfo: { name: "s", version: "1" } },
          });
        }
      });
    const handler = async () => ({});
    const full = answering();
    await new McpClient(full, { roots: [{ uri: "file:///w" }], onSampling: handler, onElicitation: handler }).connect();
    expect(wire(full.sent)[0]).toEqual({
      id: 0,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: { roots: { listChanged: true }, sampling: {}, elicitation: { form: {} } },
        clientInfo: { name: "pi-course", version: "0.1.0" },
      },
    });
    const both = answering();
    await new McpClient(both, { onElicitation: handler, elicitationModes: ["form", "url"] }).connect();
    expect(wire(both.sent)[0]).toEqual({
      id: 0,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: { elicitation: { form: {}, url: {} } },
        clientInfo: { name: "pi-course", version: "0.1.0" },
      },
    });

    // a server that never answers: the caller's signal ends the handshake, and the transport is closed
    const controller = new AbortController();
    const mute = new MemoryTransport(() => controller.abort("stop"));
    const connecting = new McpClient(mute).connect({ signal: controller.signal });
    expect(await connecting.catch((e: McpError) => [e.kind, e.message])).toEqual([
      "aborted",
      "initialize was aborted: stop",
    ]);
    expect(mute.closed).toBe(true);

    const future = new MemoryTransport((message, reply) => {
      if ("method" in message && message.method === "initialize" && "id" in message)
        reply({ jsonrpc: "2.0", id: message.id, result: { protocolVersion: "2099-01-01", capabilities: {} } });
    });
    expect(await new McpClient(future).connect().catch((e: McpError) => e.kind)).toBe("protocol");
  });

  it("Lab 17.3 · start gives the server no arguments but its own, only the inherited variables plus its env, skips blank lines, and stops reading once closed", async () => {
    const server = await scriptedServer();
    // the environment and the arguments, as the server sees them
    const seen = await transportEvents({ command: server, env: { MODE: "env", EXTRA: "1" } }, (events) =>
      events.some(([kind]) => kind === "message"),
    );
    const inherited = Object.fromEntries(
      INHERITED_ENV.filter((name) => process.env[name] !== undefined).map((name) => [name, process.env[name]]),
    );
    // on Linux, spawnServer's marker of the server's processes (given: see its comment)
    const marker = process.platform === "linux" ? { PI_COURSE_CALL: expect.stringMatching(/^[0-9a-f]{24}$/) } : {};
    expect(seen.events[0]).toEqual([
      "message",
      {
        jsonrpc: "2.0",
        method: "notifications/message",
        params: { level: "info", data: { argv: [], env: { ...inherited, MODE: "env", EXTRA: "1", ...marker } } },
      },
    ]);
    await seen.transport.close();

    // blank lines are skipped without a word; a close while a chunk is read delivers none of its later lines
    const lines = await transportEvents(
      { command: server, env: { MODE: "lines" } },
      (events) => events.some(([kind]) => kind === "close"),
      (transport) => void transport.close(),
    );
    await lines.transport.close();
    expect(lines.events).toEqual([
      ["message", { jsonrpc: "2.0", method: "first" }],
      ["close", "the connection was closed"],
    ]);
  });

  it("Lab 17.3 · the server's end says how it ended: the exit code without a stderr line, the signal that killed it", async () => {
    const server = await scriptedServer();
    const exit = await transportEvents({ command: server, env: { MODE: "exit" } }, (events) =>
      events.some(([kind]) => kind === "close"),
    );
    expect(exit.events).toEqual([["close", "the server process exited with code 0"]]);

    // the server is tracked, so that what is still running when pi exits is killed (SIGKILL)
    const killed = await transportEvents(
      { command: server, env: { MODE: "wait" } },
      (events) => events.some(([kind]) => kind === "close"),
      undefined,
      () => killLiveProcessGroups(),
    );
    expect(killed.events).toEqual([["close", "the server process was killed by SIGKILL"]]);
  });

  it("Lab 17.3 · a server that cannot be started says why: a missing cwd, a file that is not executable", async () => {
    const cwd = path.join(dir, "gone");
    const missing = new StdioTransport({ command: process.execPath, cwd });
    expect(await missing.start({ onMessage: () => {}, onClose: () => {} }).catch((e: Error) => e.message)).toBe(
      `cannot start "${process.execPath}": no such program (is it installed and on PATH, or is the cwd ${cwd} missing?)`,
    );
    const file = path.join(dir, "not-a-program");
    await writeFile(file, "#!/bin/sh\n", { mode: 0o644 });
    const refused = new StdioTransport({ command: file });
    expect(await refused.start({ onMessage: () => {}, onClose: () => {} }).catch((e: Error) => e.message)).toBe(
      `cannot start "${file}": spawn ${file} EACCES`,
    );
  });

  it("Lab 17.3 · an over-long line stops the server, and a write to a server that closed its stdin fails without crashing the client", async () => {
    const server = await scriptedServer();
    const flood = new StdioTransport({ command: server, env: { MODE: "flood" }, maxLineBytes: 1024, graceMs: 100 });
    let ended: Error | undefined;
    await flood.start({ onMessage: () => {}, onClose: (error) => (ended = error) });
    const pid = flood.pid!;
    try {
      // nobody calls close: the broken stream alone ends the process
      expect(await gone(pid)).toBe(true);
      expect(ended).toBeInstanceOf(LineTooLongError);
    } finally {
      await flood.close();
    }

    const deaf = await transportEvents({ command: server, env: { MODE: "deaf" }, graceMs: 100 }, (events) =>
      events.some(([kind]) => kind === "message"),
    );
    try {
      // EPIPE: the send fails; the stream's own error event must not go unhandled
      await expect(deaf.transport.send({ jsonrpc: "2.0", method: "ping", id: 1 })).rejects.toThrow(
        "cannot write to the server: write EPIPE",
      );
    } finally {
      await deaf.transport.close();
    }
  });

  it("Lab 17.3 · a server's own children end with it (its process group), and close before start has nothing to end", async () => {
    const pidFile = path.join(dir, "grandchild.pid");
    const server = path.join(path.dirname(FAULT_SERVER), "spawning-server.mjs");
    const client = stdioClient([server, pidFile]);
    await client.connect({ timeoutMs: 20_000 });
    const grandchild = Number(await readFile(pidFile, "utf8"));
    try {
      await client.close();
      expect(await gone(grandchild)).toBe(true);
    } finally {
      if (!(await gone(grandchild, 0))) process.kill(grandchild, "SIGKILL");
    }
    await expect(new StdioTransport({ command: "never-started" }).close()).resolves.toBeUndefined();
  });

  /** What a scripted server does (MODE in its environment): a Node program run with no arguments. */
  const SCRIPTED_SERVER = String.raw`
const mode = process.env.MODE;
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
setInterval(() => {}, 1000);
if (mode === "deaf") {
  require("node:fs").closeSync(0);
  send({ method: "deaf" });
} else {
  process.stdin.on("end", () => mode !== "flood" && process.exit(0));
  process.stdin.resume();
}
if (mode === "env") send({ method: "notifications/message", params: { level: "info", data: { argv: process.argv.slice(2), env: process.env } } });
if (mode === "lines") process.stdout.write('\n   \n\t\n{"jsonrpc":"2.0","method":"first"}\n{"jsonrpc":"2.0","method":"second"}\n');
if (mode === "exit") process.exit(0);
if (mode === "flood") process.stdout.write("x".repeat(4096));
`;

  /** Writes the scripted server as an executable file of the test's folder; returns its path. */
  async function scriptedServer(): Promise<string> {
    const file = path.join(dir, "scripted-server");
    await writeFile(file, `#!${process.execPath}\n${SCRIPTED_SERVER}`, { mode: 0o755 });
    return file;
  }

  type TransportEvent = [kind: "message", message: JsonRpcMessage] | [kind: "close" | "diagnostic", text: string];

  /**
   * Starts a StdioTransport and records what it hands its handlers until `until` holds.
   * `onMessage` runs after each message is recorded; `afterStart` once the process has started.
   */
  async function transportEvents(
    params: ConstructorParameters<typeof StdioTransport>[0],
    until: (events: TransportEvent[]) => boolean,
    onMessage?: (transport: StdioTransport) => void,
    afterStart?: () => void,
  ): Promise<{ transport: StdioTransport; events: TransportEvent[] }> {
    const transport = new StdioTransport({ graceMs: 500, ...params });
    const events: TransportEvent[] = [];
    let check = () => {};
    const done = new Promise<void>((resolve) => {
      check = () => {
        if (until(events)) resolve();
      };
    });
    await transport.start({
      onMessage: (message) => {
        events.push(["message", message]);
        onMessage?.(transport);
        check();
      },
      onClose: (error) => {
        events.push(["close", error.message]);
        check();
      },
      onDiagnostic: (text) => {
        events.push(["diagnostic", text]);
        check();
      },
    });
    afterStart?.();
    await done;
    return { transport, events };
  }

  /** Whether process `pid` is gone (or a zombie) within `withinMs`. */
  async function gone(pid: number, withinMs = 5000): Promise<boolean> {
    const deadline = Date.now() + withinMs;
    for (;;) {
      if (!alive(pid)) return true;
      if (Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  function alive(pid: number): boolean {
    try {
      process.kill(pid, 0);
      return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
    } catch {
      return false;
    }
  }
});

describe("MCP tools as agent tools", () => {
  it("Lab 17.4 · mcpToolName: mcp__server__tool, other characters replaced, at most 64, a hash on collision", () => {
    expect(mcpToolName("everything", "get-tiny-image")).toBe("mcp__everything__get-tiny-image");
    expect(mcpToolName("my server", "read.file")).toBe("mcp__my_server__read_file");
    const long = mcpToolName("s", "x".repeat(80));
    expect(long).toMatch(/^mcp__s__x{49}_[0-9a-f]{6}$/);
    expect(long).toHaveLength(64);
    expect(mcpToolName("s", "x".repeat(80))).toBe(long); // stable
    const taken = new Set(["mcp__a_b__c"]);
    const other = mcpToolName("a.b", "c", taken);
    expect(other).toMatch(/^mcp__a_b__c_[0-9a-f]{6}$/);
  });

  it("Lab 17.4 · mcpToolName: exactly 64 characters stays whole; the hash tells apart long names cut alike; collision after collision still gives a new name", () => {
    // "more than 64" is what gets cut: 64 is still a valid name
    expect(mcpToolName("s", "x".repeat(56))).toBe(`mcp__s__${"x".repeat(56)}`);
    // two tools whose names differ only past the cut: the hash of the full names keeps them apart
    const a = mcpToolName("s", `${"x".repeat(60)}a`);
    const b = mcpToolName("s", `${"x".repeat(60)}b`);
    expect(a.slice(0, 57)).toBe(b.slice(0, 57));
    expect(a).not.toBe(b);
    // the same name asked for again and again (each answer taken): every answer is new, and the same each run
    const run = () => {
      const taken = new Set<string>();
      for (let i = 0; i < 4; i++) {
        const name = mcpToolName("a.b", "c", taken);
        expect(taken.has(name)).toBe(false);
        taken.add(name);
      }
      return [...taken];
    };
    const names = run();
    expect(names[0]).toBe("mcp__a_b__c");
    for (const name of names.slice(1)) expect(name).toMatch(/^mcp__a_b__c_[0-9a-f]{6}$/);
    expect(run()).toEqual(names);
  });

  it("Lab 17.4 · mapCallResult: text, image, resource, resource_link, structuredContent in details, isError", () => {
    const result = mapCallResult("s", "t", {
      content: [
        { type: "text", text: "hi" },
        { type: "image", data: "iVBOR", mimeType: "image/png" },
        { type: "resource", resource: { uri: "demo://r/1", mimeType: "text/plain", text: "body" } },
        { type: "resource", resource: { uri: "demo://r/2", mimeType: "application/octet-stream", blob: "AAAA" } },
        { type: "resource_link", uri: "demo://r/3", name: "Three", description: "the third", mimeType: "text/plain" },
      ],
      structuredContent: { sum: 3 },
    });
    expect(result).toEqual({
      content: [
        { type: "text", text: "hi" },
        { type: "image", data: "iVBOR", mimeType: "image/png" },
        { type: "text", text: "Resource demo://r/1 (text/plain):\nbody" },
        { type: "text", text: "Resource demo://r/2 (application/octet-stream), 3 bytes of binary data" },
        { type: "text", text: "Resource link: Three: demo://r/3 (text/plain) — the third" },
      ],
      details: { server: "s", tool: "t", structuredContent: { sum: 3 } },
    });
    expect(mapCallResult("s", "t", { content: [{ type: "text", text: "bad" }], isError: true })).toEqual({
      content: [{ type: "text", text: "bad" }],
      details: { server: "s", tool: "t" },
      isError: true,
    });
  });

  it("Lab 17.4 · mapCallResult: an empty result still gives the model a text, one that says whether the tool failed; no structuredContent, no key for it", () => {
    expect(mapCallResult("s", "t", { content: [] })).toStrictEqual({
      content: [{ type: "text", text: "(no content)" }],
      details: { server: "s", tool: "t" },
    });
    expect(mapCallResult("s", "t", { content: [], isError: false })).toStrictEqual({
      content: [{ type: "text", text: "(no content)" }],
      details: { server: "s", tool: "t" },
    });
    expect(mapCallResult("s", "t", { content: [], isError: true })).toStrictEqual({
      content: [{ type: "text", text: "The tool failed and said nothing." }],
      details: { server: "s", tool: "t" },
      isError: true,
    });
  });

  it("Lab 17.4 · server-everything's tools in an agent run: every content type, a tool error, an unknown tool, progress, and task-only tools hidden", async () => {
    const client = stdioClient(everything());
    await client.connect({ timeoutMs: 20_000 });
    const { tools, hidden } = mcpAgentTools("everything", client, await client.listTools());
    expect(hidden).toEqual([
      "simulate-research-query (it requires task augmentation, which this client does not support)",
    ]);
    expect(tools.map((t) => t.name)).toContain("mcp__everything__get-tiny-image");
    const echo = tools.find((t) => t.name === "mcp__everything__echo")!;
    expect(echo.parameters).toMatchObject({
      type: "object",
      properties: { message: { type: "string" } },
      required: ["message"],
    });

    const call = (id: string, name: string, args: unknown) => ({
      type: "toolCall" as const,
      id,
      name,
      arguments: args,
    });
    const model = new ScriptedModel(
      [
        assistantMessage(
          [
            call("1", "mcp__everything__echo", { message: "hi" }),
            call("2", "mcp__everything__get-tiny-image", {}),
            call("3", "mcp__everything__get-resource-reference", { resourceType: "Text", resourceId: 1 }),
            call("4", "mcp__everything__get-resource-links", { count: 1 }),
            call("5", "mcp__everything__get-structured-content", { location: "New York" }),
            call("6", "mcp__everything__get-sum", { a: "one", b: 2 }),
            call("7", "mcp__everything__trigger-long-running-operation", { duration: 0.3, steps: 3 }),
          ],
          "toolUse",
        ),
        assistantMessage([{ type: "text", text: "done" }], "stop"),
        // Call 6 is wrong on purpose (the server's own error is under test): no check of scripted calls.
      ],
      { checkToolCalls: false },
    );
    const run = agentLoop([userMessage("use everything")], { messages: [], tools }, { model });
    const updates: string[] = [];
    for await (const event of run) {
      if (event.type === "tool_execution_update")
        updates.push((event.partialResult as { content: { text: string }[] }).content[0]!.text);
    }
    const results = (await run.result()).filter((m): m is ToolResultMessage => "role" in m && m.role === "toolResult");
    const byId = new Map(results.map((r) => [r.toolCallId, r]));
    expect(byId.get("1")).toMatchObject({ isError: false, content: [{ type: "text", text: "Echo: hi" }] });
    const image = byId.get("2")!.content.find((c) => c.type === "image");
    expect(image).toMatchObject({ type: "image", mimeType: "image/png" });
    expect(byId.get("3")!.content[1]).toMatchObject({
      type: "text",
      text: expect.stringMatching(
        /^Resource demo:\/\/resource\/dynamic\/text\/1 \(text\/plain\):\nResource 1: This is a plaintext resource/,
      ),
    });
    expect(
      byId.get("4")!.content.some((c) => c.type === "text" && /^Resource link: .*demo:\/\/resource/.test(c.text)),
    ).toBe(true);
    expect((byId.get("5")!.details as { structuredContent: unknown }).structuredContent).toMatchObject({
      conditions: expect.any(String),
    });
    // the loop checks arguments against the server's inputSchema before the call
    expect(byId.get("6")).toMatchObject({ isError: true });
    expect((byId.get("6")!.content[0] as { text: string }).text).toMatch(
      /^Invalid arguments for tool "mcp__everything__get-sum":\n {2}- \/a: /,
    );
    expect(byId.get("7")).toMatchObject({
      isError: false,
      content: [{ type: "text", text: "Long running operation completed. Duration: 0.3 seconds, Steps: 3." }],
    });
    expect(updates).toEqual(["progress 1/3", "progress 2/3", "progress 3/3"]);

    // an unknown tool is a result with isError, not a JSON-RPC error
    const unknown = await client.callTool("no-such-tool", {});
    expect(mapCallResult("everything", "no-such-tool", unknown)).toEqual({
      content: [{ type: "text", text: "MCP error -32602: Tool no-such-tool not found" }],
      details: { server: "everything", tool: "no-such-tool" },
      isError: true,
    });
  }, 30_000);

  it("Lab 17.4 · an abort during an MCP tool call answers the call as an error at once, and the server stays usable", async () => {
    const client = stdioClient(everything());
    await client.connect({ timeoutMs: 20_000 });
    const { tools } = mcpAgentTools("everything", client, await client.listTools());
    const model = new ScriptedModel([
      assistantMessage(
        [
          {
            type: "toolCall",
            id: "1",
            name: "mcp__everything__trigger-long-running-operation",
            arguments: { duration: 5, steps: 5 },
          },
        ],
        "toolUse",
      ),
      assistantMessage([{ type: "text", text: "never" }], "stop"),
    ]);
    const controller = new AbortController();
    const run = agentLoop([userMessage("go")], { messages: [], tools }, { model }, controller.signal);
    const started = Date.now();
    for await (const event of run) if (event.type === "tool_execution_start") setTimeout(() => controller.abort(), 100);
    const results = (await run.result()).filter((m): m is ToolResultMessage => "role" in m && m.role === "toolResult");
    expect(results).toHaveLength(1);
    expect(results[0]!.isError).toBe(true);
    expect(Date.now() - started).toBeLessThan(3000);
    // the server is still usable after the cancellation
    expect((await client.callTool("echo", { message: "after" })).content).toEqual([
      { type: "text", text: "Echo: after" },
    ]);
  }, 30_000);

  it("Lab 17.4 · server-filesystem's read_text_file through the agent: the model reads the file's text", async () => {
    const note = "MCP works.";
    await writeFile(path.join(dir, "notes.md"), `# Notes\n${note}\n`);
    const client = stdioClient([serverEntry("server-filesystem"), dir]);
    await client.connect({ timeoutMs: 20_000 });
    const { tools } = mcpAgentTools("fs", client, await client.listTools());
    const model = new ScriptedModel([
      assistantMessage(
        [
          {
            type: "toolCall",
            id: "r",
            name: "mcp__fs__read_text_file",
            arguments: { path: path.join(dir, "notes.md") },
          },
        ],
        "toolUse",
      ),
      (context) => {
        const last = context.messages.at(-1)!;
        const text = last.role === "toolResult" && last.content[0]?.type === "text" ? last.content[0].text : "?";
        return assistantMessage([{ type: "text", text: `The file says: ${text.split("\n")[1]}` }], "stop");
      },
    ]);
    const run = agentLoop([userMessage("read notes.md")], { messages: [], tools }, { model });
    const messages = await run.result();
    const result = messages.find((m): m is ToolResultMessage => "role" in m && m.role === "toolResult")!;
    expect(result).toMatchObject({
      toolName: "mcp__fs__read_text_file",
      isError: false,
      content: [{ type: "text", text: "# Notes\nMCP works.\n" }],
      details: { server: "fs", tool: "read_text_file", structuredContent: { content: "# Notes\nMCP works.\n" } },
    });
    const answer = messages.at(-1)!;
    expect("role" in answer && answer.role === "assistant" && answer.content[0]).toEqual({
      type: "text",
      text: `The file says: ${note}`,
    });
    // outside the allowed folder: the server's error, as a result the model reads
    const denied = await tools
      .find((t) => t.name === "mcp__fs__read_text_file")!
      .execute("d", { path: "/etc/hostname" });
    expect(denied.isError).toBe(true);
    expect((denied.content[0] as { text: string }).text).toMatch(/Access denied/);
  }, 30_000);
});

describe("configuration: mcpServers as users already write it", () => {
  it("Lab 17.5 · expandVariables takes ${VAR} and ${VAR:-default} from the environment and names a missing one", () => {
    const env = { KEY: "k-1", EMPTY: "" };
    expect(expandVariables("Bearer ${KEY}", env)).toBe("Bearer k-1");
    expect(expandVariables("${EMPTY:-x}|${NONE:-fallback}|$KEY|${KEY}", env)).toBe("|fallback|$KEY|k-1");
    expect(() => expandVariables("${NOPE}", env)).toThrow("${NOPE} is not set in the environment");
  });

  it("Lab 17.5 · parseMcpConfig reads stdio and HTTP servers, keeps a wrong entry with its problem, and refuses a file of another shape", () => {
    const file = path.join("/home/u", ".pi-course", "mcp.json");
    const text = JSON.stringify({
      mcpServers: {
        fs: {
          command: "npx",
          args: ["-y", "@modelcontextprotocol/server-filesystem", "."],
          env: { TOKEN: "${FS_TOKEN}" },
          cwd: "work",
        },
        web: {
          type: "http",
          url: "https://example.com/mcp",
          headers: { Authorization: "Bearer ${WEB_TOKEN}" },
          startupTimeoutMs: 2500,
        },
        off: { command: "x", disabled: true },
        impatient: { command: "x", startupTimeoutMs: "soon" },
        broken: { args: [] },
        secret: { url: "https://example.com/mcp", headers: { Authorization: "Bearer ${MISSING}" } },
        old: { type: "sse", url: "https://example.com/sse" },
      },
    });
    expect(parseMcpConfig(text, file, { FS_TOKEN: "t1", WEB_TOKEN: "t2" })).toEqual([
      {
        name: "fs",
        source: file,
        transport: {
          kind: "stdio",
          command: "npx",
          args: ["-y", "@modelcontextprotocol/server-filesystem", "."],
          env: { TOKEN: "t1" },
          cwd: "/home/u/.pi-course/work",
        },
      },
      {
        name: "web",
        source: file,
        transport: { kind: "http", url: "https://example.com/mcp", headers: { Authorization: "Bearer t2" } },
        startupTimeoutMs: 2500,
      },
      {
        name: "impatient",
        source: file,
        problem: `server "impatient" in ${file}: "startupTimeoutMs" must be a whole number of milliseconds above 0, got "soon"`,
      },
      {
        name: "broken",
        source: file,
        problem: `server "broken" in ${file}: needs "command" (a program to start) or "url" (a Streamable HTTP endpoint)`,
      },
      {
        name: "secret",
        source: file,
        problem: `server "secret" in ${file}: "headers.Authorization": \${MISSING} is not set in the environment`,
      },
      {
        name: "old",
        source: file,
        problem: `server "old" in ${file}: the old HTTP+SSE transport ("type": "sse") is not supported; use the server's Streamable HTTP endpoint`,
      },
    ]);
    expect(() => parseMcpConfig("{", file, {})).toThrow(McpConfigError);
    expect(() => parseMcpConfig('{"servers": {}}', file, {})).toThrow(
      `${file} must be a JSON object with an "mcpServers" object: {"mcpServers": {"NAME": {"command": …} | {"url": …}}}`,
    );
  });

  it("Lab 17.5 · loadMcpConfig: the user's file, the project's only when trusted, then --mcp-config files, later names winning", async () => {
    const home = path.join(dir, "home");
    const project = path.join(dir, "project");
    await mkdir(path.join(home, ".pi-course"), { recursive: true });
    await mkdir(path.join(project, ".pi-course"), { recursive: true });
    await writeFile(
      path.join(home, ".pi-course", "mcp.json"),
      JSON.stringify({ mcpServers: { a: { command: "user-a" }, b: { command: "user-b" } } }),
    );
    await writeFile(
      path.join(project, ".pi-course", "mcp.json"),
      JSON.stringify({ mcpServers: { b: { command: "project-b" }, c: { command: "project-c" } } }),
    );
    const extra = path.join(dir, "servers.json");
    await writeFile(extra, JSON.stringify({ mcpServers: { a: { command: "extra-a" } } }));
    const commands = (servers: McpServerConfig[] = []) =>
      servers.map((s) => `${s.name}=${s.transport?.kind === "stdio" ? s.transport.command : s.problem}`);

    const untrusted = loadMcpConfig({ home, project, projectTrusted: false, files: [extra], env: {} });
    expect(commands(untrusted.servers)).toEqual(["b=user-b", "a=extra-a"]);
    expect(untrusted.notices).toEqual([
      `the project's MCP servers (${path.join(project, ".pi-course", "mcp.json")}) are not started: the folder is not trusted`,
    ]);

    const trusted = loadMcpConfig({ home, project, projectTrusted: true, files: [extra], env: {} });
    expect(commands(trusted.servers)).toEqual(["b=project-b", "c=project-c", "a=extra-a"]);
    expect(trusted.notices).toEqual([]);

    expect(() => loadMcpConfig({ home, projectTrusted: false, files: [path.join(dir, "nope.json")], env: {} })).toThrow(
      `the MCP configuration ${path.join(dir, "nope.json")} does not exist`,
    );
    // the CLI's parseArgs reads the user's files only: the project's waits for the trust decision (main.ts)
    const options = parseArgs(["--no-session", "--mcp-config", extra], { HOME: home, INIT_CWD: project }, false);
    expect(options.kind === "run" && [commands(options.mcpServers), options.mcpNotices]).toEqual([
      ["b=user-b", "a=extra-a"],
      [],
    ]);
  });

  it("Lab 17.5 · a project's .pi-course/mcp.json passes chapter 12's trust gate: --no-approve names it, --approve starts it", async () => {
    const project = path.join(dir, "project");
    await mkdir(path.join(project, ".pi-course"), { recursive: true });
    const file = path.join(project, ".pi-course", "mcp.json");
    await writeFile(
      file,
      JSON.stringify({
        // "direct": a --print run waits for its start (up to 10 s), so its state is in the banner
        mcpServers: {
          fs: { command: process.execPath, args: [serverEntry("server-filesystem"), project], exposure: "direct" },
        },
      }),
    );
    const model = createServer((request, response) => {
      request.resume();
      request.on("end", () => {
        const chunk = (delta: unknown, finish: string | null = null) =>
          `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        response.writeHead(200, { "content-type": "text/event-stream" });
        response.end(chunk({ role: "assistant", content: "ok" }) + chunk({}, "stop") + "data: [DONE]\n\n");
      });
    });
    await new Promise<void>((resolve) => model.listen(0, "127.0.0.1", resolve));
    const baseUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
    const run = async (approve: string) => {
      let stderr = "";
      const argv = [
        "--base-url",
        baseUrl,
        "--model",
        "m",
        "--no-api-key",
        "--cwd",
        project,
        "--no-session",
        approve,
        "-p",
        "hi",
      ];
      const code = await runMain(argv, {
        stdout: { write: () => true },
        stderr: { write: (text: string) => (stderr += text) },
        env: { HOME: dir, INIT_CWD: project },
      });
      // a failed start (in a practice folder: a lab's not-implemented error) fails here, saying why
      if (code !== 0) throw new Error(stderr);
      return stderr;
    };
    try {
      const refused = await run("--no-approve");
      expect(refused).toContain(
        `note: the project's MCP servers (${file}) are not started: the folder is not trusted (--approve trusts it for one run; the interactive mode asks)\n`,
      );
      expect(refused).not.toContain("MCP server fs");
      const approved = await run("--approve");
      expect(approved).toMatch(/^note: MCP server fs: ready with \d+ tools\n/m);
      expect(approved).not.toContain("are not started");
    } finally {
      await new Promise((resolve) => model.close(resolve));
    }
  }, 30_000);

  it("Lab 17.5 · McpServers start in parallel; a server that cannot start or is misconfigured fails alone, with the reason", async () => {
    const configs = parseMcpConfig(
      JSON.stringify({
        mcpServers: {
          everything: { command: process.execPath, args: everything() },
          missing: { command: "no-such-mcp-server-here" },
          mute: {
            command: process.execPath,
            args: ["-e", "process.stderr.write('booting\\n'); process.stdin.resume()"],
            // its own short start-up timeout: a focused run does not wait out the real server's
            startupTimeoutMs: 1500,
          },
          bad: { args: [] },
        },
      }),
      "t",
      {},
    );
    // Long enough for the real server to start on a loaded machine (it missed 6 s at load 20).
    const servers = McpServers.start(configs, { startupTimeoutMs: 12_000, graceMs: 200, reservedNames: ["read"] });
    expect(servers.entries().map((e) => e.state.status)).toEqual(["starting", "starting", "starting", "failed"]);
    await servers.ready();
    try {
      expect(servers.entries().map((e) => e.state.status)).toEqual(["ready", "failed", "failed", "failed"]);
      expect(servers.tools.every((t) => t.name.startsWith("mcp__everything__"))).toBe(true);
      const lines = servers.describe().split("\n");
      expect(lines[0]).toMatch(
        /^everything: ready with 12 tools \(1 hidden: simulate-research-query \(it requires task augmentation, which this client does not support\)\)$/,
      );
      expect(lines).toContain(
        'missing: failed: cannot start "no-such-mcp-server-here": no such program (is it installed and on PATH?)',
      );
      expect(lines).toContain("mute: failed: initialize timed out: no answer within 1500 ms");
      expect(lines).toContain("  stderr: booting");
      expect(lines).toContain(
        'bad: failed: server "bad" in t: needs "command" (a program to start) or "url" (a Streamable HTTP endpoint)',
      );
    } finally {
      await servers.close();
    }
  }, 60_000);

  it("Lab 17.5 · end to end: npm start with --mcp-config gives the model server-filesystem's tools, and it reads a file through them", async () => {
    const workspace = path.join(dir, "work");
    await mkdir(workspace);
    await writeFile(path.join(workspace, "notes.md"), "MCP reaches the agent.\n");
    const config = path.join(dir, "servers.json");
    await writeFile(
      config,
      JSON.stringify({
        // "direct": a --print run waits for its start (up to 10 s), so its tools are in the first request
        mcpServers: {
          fs: { command: process.execPath, args: [serverEntry("server-filesystem"), workspace], exposure: "direct" },
        },
      }),
    );
    // an OpenAI-compatible model on 127.0.0.1: first a call of the MCP tool, then an answer that quotes its result
    const bodies: any[] = [];
    const model = createServer((request, response) => {
      let text = "";
      request.on("data", (chunk) => (text += chunk));
      request.on("end", () => {
        const body = JSON.parse(text);
        bodies.push(body);
        const chunk = (delta: unknown, finish: string | null = null) =>
          `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        response.writeHead(200, { "content-type": "text/event-stream" });
        if (bodies.length === 1) {
          const args = JSON.stringify({ path: path.join(workspace, "notes.md") });
          response.end(
            chunk({
              role: "assistant",
              tool_calls: [
                {
                  index: 0,
                  id: "call_1",
                  type: "function",
                  function: { name: "mcp__fs__read_text_file", arguments: args },
                },
              ],
            }) +
              chunk({}, "tool_calls") +
              "data: [DONE]\n\n",
          );
        } else {
          const result = body.messages.at(-1);
          response.end(
            chunk({ role: "assistant", content: `The notes say: ${result.content}` }) +
              chunk({}, "stop") +
              "data: [DONE]\n\n",
          );
        }
      });
    });
    await new Promise<void>((resolve) => model.listen(0, "127.0.0.1", resolve));
    const baseUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
    let stdout = "";
    let stderr = "";
    try {
      const code = await runMain(
        [
          "--base-url",
          baseUrl,
          "--model",
          "m",
          "--no-api-key",
          "--cwd",
          workspace,
          "--no-session",
          "--mcp-config",
          config,
          "-p",
          "read notes.md",
        ],
        {
          stdout: { write: (text: string) => (stdout += text) },
          stderr: { write: (text: string) => (stderr += text) },
          env: { HOME: dir, INIT_CWD: dir },
        },
      );
      expect(code).toBe(0);
    } finally {
      await new Promise((resolve) => model.close(resolve));
    }
    expect(stdout).toBe("The notes say: MCP reaches the agent.\n\n");
    expect(stderr).toMatch(/^note: MCP server fs: ready with \d+ tools\n/m);
    const offered = bodies[0].tools.map((t: { function: { name: string } }) => t.function.name);
    expect(offered).toEqual(
      expect.arrayContaining([
        "read",
        "write",
        "edit",
        "ls",
        "bash",
        "mcp__fs__read_text_file",
        "mcp__fs__list_directory",
      ]),
    );
  }, 30_000);
});
