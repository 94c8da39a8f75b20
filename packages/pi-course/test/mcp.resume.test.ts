/**
 * Streams that close, against a server built with the official SDK (1.32.2) on 127.0.0.1 with an
 * event store, as the 2025-11-25 specification's resumability has it: the server closes a call's
 * response stream before answering (`closeSSEStream`) and the client reads on from a GET with
 * `Last-Event-ID` after the server's `retry`; the server closes the GET stream
 * (`closeStandaloneSSEStream`) and a list change sent later still arrives, on the stream the
 * client opened again.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { EventStore } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { afterEach, expect, it } from "vitest";
import { McpClient } from "../src/mcp/client.js";
import { HttpTransport } from "../src/mcp/streamable-http.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Every event of a session, in order (the SDK's example store splits event ids at "_", which its
 * own GET stream's id holds, so it never replays that stream).
 */
function eventStore(): EventStore {
  const events: { id: string; stream: string; message: Parameters<EventStore["storeEvent"]>[1] }[] = [];
  return {
    async storeEvent(stream, message) {
      const id = String(events.length + 1);
      events.push({ id, stream, message });
      return id;
    },
    async getStreamIdForEventId(id) {
      return events.find((event) => event.id === id)?.stream;
    },
    async replayEventsAfter(lastEventId, { send }) {
      const at = events.findIndex((event) => event.id === lastEventId);
      const stream = events[at]?.stream ?? "";
      for (const event of events.slice(at + 1)) if (event.stream === stream) await send(event.id, event.message);
      return stream;
    },
  };
}

/** An SDK server whose tools close their own streams; `requests` records each request as `METHOD last-event-id?`. */
async function resumableServer(): Promise<{ url: string; requests: string[] }> {
  const requests: string[] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http: Server = createServer(async (req: IncomingMessage, res) => {
    const last = req.headers["last-event-id"];
    requests.push(`${req.method}${last === undefined ? "" : " after an event"}`);
    const id = req.headers["mcp-session-id"];
    let transport = typeof id === "string" ? sessions.get(id) : undefined;
    if (transport === undefined) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        eventStore: eventStore(),
        retryInterval: 100,
        onsessioninitialized: (session) => void sessions.set(session, transport!),
      });
      const server = new McpServer({ name: "closing", version: "1.0.0" });
      server.registerTool("slow", { description: "Answers after closing its stream." }, async (extra) => {
        extra.closeSSEStream?.();
        await sleep(300);
        return { content: [{ type: "text", text: "answered after the stream closed" }] };
      });
      server.registerTool(
        "announce",
        { description: "Adds a tool, closes the GET stream, adds another." },
        async (extra) => {
          server.registerTool("first", { description: "Came first." }, async () => ({ content: [] }));
          await sleep(300); // the first list change (an event with an id) reaches the GET stream
          extra.closeStandaloneSSEStream?.();
          setTimeout(() => {
            server.registerTool("added", { description: "Came later." }, async () => ({ content: [] }));
          }, 500);
          return { content: [{ type: "text", text: "a tool comes in half a second" }] };
        },
      );
      await server.connect(transport);
    }
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  closers.push(async () => {
    for (const transport of sessions.values()) await transport.close();
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  });
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`, requests };
}

it("a response stream the server closes before answering is read on from Last-Event-ID after its retry, and the call gets its answer", async () => {
  const { url, requests } = await resumableServer();
  const client = new McpClient(new HttpTransport({ url }));
  closers.unshift(() => client.close());
  await client.connect({ timeoutMs: 10_000 });
  requests.length = 0;
  const result = await client.callTool("slow", {}, { timeoutMs: 10_000 });
  expect(result.content).toEqual([{ type: "text", text: "answered after the stream closed" }]);
  // the call's POST, then one GET that resumed it
  expect(requests).toEqual(["POST", "GET after an event"]);
});

it("the GET stream the server closes is opened again from its last event, and a list change sent while it was closed arrives", async () => {
  const { url, requests } = await resumableServer();
  const changed: string[][] = [];
  const client = new McpClient(new HttpTransport({ url }), {
    onToolsChanged: (tools) => changed.push(tools.map((tool) => tool.name)),
  });
  closers.unshift(() => client.close());
  await client.connect({ timeoutMs: 10_000 });
  expect((await client.listTools()).map((tool) => tool.name)).toEqual(["slow", "announce"]);
  requests.length = 0;
  await client.callTool("announce", {}, { timeoutMs: 10_000 });
  const deadline = Date.now() + 15_000;
  while (!changed.at(-1)?.includes("added") && Date.now() < deadline) await sleep(20);
  expect(changed.at(-1)).toEqual(["slow", "announce", "first", "added"]);
  expect(requests.filter((request) => request.startsWith("GET"))).toEqual(["GET after an event"]);
}, 30_000);

it("a response stream that ends without an event id cannot be resumed: the call fails and says so", async () => {
  const http = createServer((req, res) => {
    if (req.method !== "POST") return void res.writeHead(405).end();
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString("utf8")));
    req.on("end", () => {
      const message = JSON.parse(body) as { id?: number; method: string; params?: { protocolVersion?: string } };
      if (message.id === undefined) return void res.writeHead(202).end();
      if (message.method === "initialize") {
        const result = {
          protocolVersion: message.params?.protocolVersion,
          capabilities: {},
          serverInfo: { name: "x", version: "1" },
        };
        res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "s1" });
        return void res.end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(": nothing to say\n\n");
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => http.close(() => resolve())));
  const client = new McpClient(
    new HttpTransport({ url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp` }),
  );
  closers.unshift(() => client.close());
  await client.connect({ timeoutMs: 10_000 });
  await expect(client.callTool("any", {}, { timeoutMs: 10_000 })).rejects.toThrow(
    "the server ended the response stream before answering",
  );
});
