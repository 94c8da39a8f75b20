/**
 * Issue 41: hostile MCP servers. A server's bad tool list fails that server alone (at start and
 * in a re-list after `list_changed`), and a list is bounded over all its pages.
 */
import { spawn } from "node:child_process";
import { readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect, it } from "vitest";
import { FAULT_SERVER } from "./support/mcp.js";
import { MAX_TOOL_LIST_CHARS, McpClient } from "../src/mcp/client.js";
import type { McpServerConfig } from "../src/mcp/config.js";
import { HttpTransport } from "../src/mcp/streamable-http.js";
import { mcpAgentTools } from "../src/mcp/mcp-tools.js";
import { riskyPattern } from "../src/mcp/schema-patterns.js";
import { McpServers } from "../src/mcp/servers.js";
import { validateToolArguments } from "../src/agent/tools.js";
import { StdioTransport } from "../src/mcp/stdio-transport.js";

const HOSTILE = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures", "mcp", "hostile-list-server.mjs");
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close()));
});

const server = (name: string, mode: string): McpServerConfig => ({
  name,
  source: "test",
  transport: { kind: "stdio", command: process.execPath, args: [HOSTILE, mode] },
});

it("a tool without a string name fails its server alone; the others start", async () => {
  const servers = McpServers.start([server("bad", "bad-name"), server("good", "relist-bad")], { graceMs: 500 });
  opened.push(servers);
  await servers.ready();
  const [bad, good] = servers.entries();
  expect(bad!.state).toEqual({
    status: "failed",
    reason: expect.stringContaining("tools/list: tool 1 has no name (a non-empty string)"),
  });
  expect(good!.state.status).toBe("ready");
  expect(servers.tools.map((t) => t.name)).toEqual(["mcp__good__echo"]);
}, 30_000);

it("a bad tool in a re-list after list_changed is a diagnostic; the agent keeps the tools it had", async () => {
  const servers = McpServers.start([server("relist", "relist-bad")], { graceMs: 500 });
  opened.push(servers);
  await servers.ready();
  expect(servers.tools.map((t) => t.name)).toEqual(["mcp__relist__echo"]);
  const deadline = Date.now() + 10_000;
  while (servers.entries()[0]!.diagnostics.length === 0 && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 20));
  expect(servers.entries()[0]!.diagnostics).toEqual([
    "re-listing the tools failed: tools/list: tool 1 has no name (a non-empty string)",
  ]);
  expect(servers.tools.map((t) => t.name)).toEqual(["mcp__relist__echo"]);
}, 30_000);

it("a tool list past its budget over all pages ends in a protocol error, not gigabytes", async () => {
  const client = new McpClient(
    new StdioTransport({ command: process.execPath, args: [HOSTILE, "big-pages"], graceMs: 500 }),
  );
  opened.push(client);
  await client.connect({ timeoutMs: 20_000 });
  const error = await client.listTools({ timeoutMs: 20_000 }).catch((e: Error) => e);
  expect(error).toBeInstanceOf(Error);
  expect((error as Error).message).toMatch(
    new RegExp(`^tools/list gave more than ${MAX_TOOL_LIST_CHARS} characters of tools \\(over [45] pages\\)$`),
  );
}, 30_000);

it("progress restarts a call's timeout, but not past its total time (maxTotalMs)", async () => {
  // "slow" answers after 60 × 50 ms = 3 s with progress every 50 ms: each progress restarts the 1 s
  // timeout, so only a call whose timeout progress restarts gets the answer. A whole second between
  // two progress messages is what a hang looks like, not a loaded machine.
  const args = [FAULT_SERVER, "--slow-steps=60"];
  const client = new McpClient(new StdioTransport({ command: process.execPath, args, graceMs: 500 }));
  opened.push(client);
  await client.connect({ timeoutMs: 20_000 });
  const progressed = await client.callTool("slow", {}, { timeoutMs: 1_000, onProgress: () => {} });
  expect(progressed.content).toEqual([{ type: "text", text: "slow done" }]);
  const capped = await client
    .callTool("slow", {}, { timeoutMs: 1_000, maxTotalMs: 1_500, onProgress: () => {} })
    .catch((e: Error) => e.message);
  expect(capped).toBe("tools/call timed out: no answer within 1500 ms in all, though progress kept coming");
}, 30_000);

/** A Streamable HTTP server whose GET event stream sends `flood` for ever (until the client goes). */
async function floodingServer(flood: string): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = flood.repeat(Math.ceil(65_536 / flood.length));
      const write = () => {
        while (!res.destroyed && res.write(chunk)) {}
        if (!res.destroyed) res.once("drain", write);
      };
      req.on("close", () => res.destroy());
      write();
      return;
    }
    if (req.method !== "POST") return void res.writeHead(200).end();
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString("utf8")));
    req.on("end", () => {
      const message = JSON.parse(body) as { id?: number; method: string; params?: { protocolVersion?: string } };
      if (message.id === undefined) return void res.writeHead(202).end();
      const result =
        message.method === "initialize"
          ? {
              protocolVersion: message.params?.protocolVersion,
              capabilities: {},
              serverInfo: { name: "flood", version: "1" },
            }
          : {};
      res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "s1" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  opened.push({
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server };
}

it("the GET event stream bounds each event: an endless data line, or data lines that never end their event", async () => {
  for (const flood of ["x", "data: x\n"]) {
    const { url, server } = await floodingServer(flood);
    const diagnostics: string[] = [];
    const client = new McpClient(new HttpTransport({ url, maxResponseBytes: 1024 * 1024 }), {
      onDiagnostic: (text) => diagnostics.push(text),
    });
    const heap = process.memoryUsage().heapUsed;
    await client.connect({ timeoutMs: 10_000 });
    const deadline = Date.now() + 25_000;
    while (diagnostics.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(diagnostics).toEqual([
      "the GET event stream broke: the server sent an event longer than 1048576 bytes; opening it again",
    ]);
    expect(process.memoryUsage().heapUsed - heap).toBeLessThan(64 * 1024 * 1024);
    await client.close();
    server.closeAllConnections();
  }
}, 90_000);

it("a redirect to another origin is not followed: the call, the session id and the configured key stay home", async () => {
  const seen: Record<string, string | undefined>[] = [];
  const elsewhere = createServer((req, res) => {
    seen.push({ key: req.headers["x-api-key"] as string | undefined, url: req.url });
    res.writeHead(500).end();
  });
  // Every local address (dual stack): "localhost" reaches it whether it resolves to 127.0.0.1 or ::1.
  await new Promise<void>((resolve) => elsewhere.listen(0, resolve));
  const port = (elsewhere.address() as AddressInfo).port;
  const home = createServer((_req, res) => {
    // "localhost" is another origin than "127.0.0.1", though the same machine.
    res.writeHead(307, { location: `http://localhost:${port}/steal` }).end();
  });
  await new Promise<void>((resolve) => home.listen(0, "127.0.0.1", resolve));
  opened.push(
    { close: () => new Promise<void>((resolve) => elsewhere.close(() => resolve())) },
    { close: () => new Promise<void>((resolve) => home.close(() => resolve())) },
  );
  const url = `http://127.0.0.1:${(home.address() as AddressInfo).port}/mcp`;
  const client = new McpClient(new HttpTransport({ url, headers: { "X-Api-Key": "secret-key" } }));
  const error = await client.connect({ timeoutMs: 10_000 }).catch((e: Error) => e.message);
  expect(error).toMatch(/a redirect to http:\/\/localhost:\d+\/steal, another origin; not followed/);
  expect(seen).toEqual([]);
  await client.close();
});

it("the event stream of an answered call is released even when the server keeps it open", async () => {
  const server = createServer((req, res) => {
    if (req.method !== "POST") return void res.writeHead(200).end();
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString("utf8")));
    req.on("end", () => {
      const message = JSON.parse(body) as { id?: number; method: string; params?: { protocolVersion?: string } };
      if (message.id === undefined) return void res.writeHead(202).end();
      if (message.method === "initialize") {
        res.writeHead(200, { "content-type": "application/json" });
        const result = {
          protocolVersion: message.params?.protocolVersion,
          capabilities: {},
          serverInfo: { name: "open", version: "1" },
        };
        return void res.end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
      }
      // The answer on an event stream that this server never ends.
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id: message.id, result: { content: [] } })}\n\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  opened.push({
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const client = new McpClient(new HttpTransport({ url }));
  opened.push(client);
  await client.connect({ timeoutMs: 10_000 });
  for (let i = 0; i < 30; i++) await client.callTool("t", {});
  await new Promise((resolve) => setTimeout(resolve, 200));
  const open = await new Promise<number>((resolve, reject) =>
    server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  );
  expect(open).toBeLessThan(5);
}, 30_000);

it("close() ends what the server started too: its whole process group", async () => {
  const pidFile = path.join(tmpdir(), `pi-course-spawning-${process.pid}-${Date.now()}`);
  const server = path.join(path.dirname(HOSTILE), "spawning-server.mjs");
  const client = new McpClient(
    new StdioTransport({ command: process.execPath, args: [server, pidFile], graceMs: 500 }),
  );
  await client.connect({ timeoutMs: 20_000 });
  const grandchild = Number(await readFile(pidFile, "utf8"));
  expect(() => process.kill(grandchild, 0)).not.toThrow();
  await client.close();
  const deadline = Date.now() + 20_000;
  let alive = true;
  while (alive && Date.now() < deadline) {
    try {
      process.kill(grandchild, 0);
      await new Promise((resolve) => setTimeout(resolve, 20));
    } catch {
      alive = false;
    }
  }
  await rm(pidFile, { force: true });
  expect(alive).toBe(false);
}, 60_000);

it("attack: a child that scrubs the marker from its environment still ends with its server (close, and the agent's exit)", async () => {
  // In the agent's session the server's process group is the agent's: without the marker only
  // parentage finds the child (the old design's process group of its own caught it).
  const pidFile = path.join(tmpdir(), `pi-course-scrubbed-${process.pid}-${Date.now()}`);
  const server = path.join(path.dirname(HOSTILE), "spawning-server.mjs");
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const until = async (done: () => boolean) => {
    for (const deadline = Date.now() + 20_000; !done() && Date.now() < deadline; )
      await new Promise((resolve) => setTimeout(resolve, 20));
  };
  // close(): the server exits at stdin's end and leaves the child behind
  const client = new McpClient(
    new StdioTransport({ command: process.execPath, args: [server, pidFile, "scrubbed"], graceMs: 500 }),
  );
  await client.connect({ timeoutMs: 20_000 });
  const child = Number(await readFile(pidFile, "utf8"));
  await rm(pidFile, { force: true });
  if (process.platform === "linux")
    expect(await readFile(`/proc/${child}/environ`, "utf8")).not.toContain("PI_COURSE_CALL=");
  expect(alive(child)).toBe(true);
  await client.close();
  await until(() => !alive(child));
  expect(alive(child)).toBe(false);
  // the agent's exit (its exit handler), with the server still running
  const source = (file: string) => JSON.stringify(fileURLToPath(new URL(`../src/mcp/${file}`, import.meta.url)));
  const script = `${pidFile}.mts`;
  await writeFile(
    script,
    `import { McpClient } from ${source("client.ts")};
     import { StdioTransport } from ${source("stdio-transport.ts")};
     const client = new McpClient(new StdioTransport({ command: process.execPath, args: ${JSON.stringify([server, pidFile, "scrubbed"])} }));
     await client.connect({ timeoutMs: 20000 });
     process.exit(0);`,
  );
  const agent = spawn(process.execPath, ["--import", "tsx", script], {
    cwd: fileURLToPath(new URL("..", import.meta.url)),
    stdio: "ignore",
  });
  expect(await new Promise((resolve) => agent.once("close", resolve))).toBe(0);
  await rm(script, { force: true });
  const orphan = Number(await readFile(pidFile, "utf8"));
  await rm(pidFile, { force: true });
  await until(() => !alive(orphan));
  expect(alive(orphan)).toBe(false);
}, 90_000);

it("a stdio server shares the agent's session on Linux (no scheduling group of its own between a message and its answer), elsewhere leads its own process group", async () => {
  const pidFile = path.join(tmpdir(), `pi-course-session-${process.pid}-${Date.now()}`);
  const server = path.join(path.dirname(HOSTILE), "spawning-server.mjs");
  const transport = new StdioTransport({ command: process.execPath, args: [server, pidFile], graceMs: 500 });
  const client = new McpClient(transport);
  await client.connect({ timeoutMs: 20_000 });
  try {
    const pid = transport.pid!;
    if (process.platform === "linux") {
      // A new session is a new autogroup: the kernel then schedules the server apart from the agent,
      // and each round trip waits for a group switch (bench/17-mcp: 2x the SDK's wall time under load).
      const session = (stat: string) => stat.slice(stat.lastIndexOf(")") + 2).split(" ")[3]; // state ppid pgrp session
      expect(session(await readFile(`/proc/${pid}/stat`, "utf8"))).toBe(
        session(await readFile("/proc/self/stat", "utf8")),
      );
      expect(await readFile(`/proc/${pid}/autogroup`, "utf8")).toBe(await readFile("/proc/self/autogroup", "utf8"));
    } else expect(() => process.kill(-pid, 0)).not.toThrow();
  } finally {
    await client.close();
    // what it started ends with it (SIGKILL; gone once its new parent has reaped it)
    const grandchild = Number(await readFile(pidFile, "utf8"));
    await rm(pidFile, { force: true });
    const alive = () => {
      try {
        process.kill(grandchild, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (const deadline = Date.now() + 20_000; alive() && Date.now() < deadline; )
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(alive()).toBe(false);
  }
}, 60_000);

const callOf = (args: Record<string, unknown>) => ({
  type: "toolCall" as const,
  id: "c1",
  name: "mcp__s__match",
  arguments: args,
});

it("a catastrophic pattern in a server's schema is not checked on the agent's thread; safe patterns still are", async () => {
  const tools = [
    {
      name: "match",
      inputSchema: {
        type: "object",
        properties: { s: { type: "string", pattern: "^(a+)+$" }, code: { type: "string", pattern: "^[A-Z]{3}-\\d+$" } },
      },
    },
  ];
  const client = new McpClient(new StdioTransport({ command: process.execPath, args: [HOSTILE, "bad-name"] }));
  const { tools: agentTools, notes } = mcpAgentTools("s", client, tools);
  expect(notes).toEqual([
    "match: patterns that could take exponential time are not checked here (/properties/s/pattern)",
  ]);
  const started = Date.now();
  // 30 characters that almost match: about 2^30 steps for a backtracking engine.
  expect(() => validateToolArguments(agentTools[0]!, callOf({ s: `${"a".repeat(30)}!`, code: "ABC-1" }))).not.toThrow();
  expect(Date.now() - started).toBeLessThan(5_000);
  expect(() => validateToolArguments(agentTools[0]!, callOf({ s: "a", code: "abc" }))).toThrow(/code/);
});

it("riskyPattern: nested quantifiers, backreferences and very long patterns; not plain ones", () => {
  for (const risky of ["^(a+)+$", "(a|b*)*", "(x{2,})+", "((ab)*c)+", "(a)\\1", "a".repeat(501)])
    expect([risky.slice(0, 20), riskyPattern(risky)]).toEqual([risky.slice(0, 20), true]);
  for (const plain of ["^[a-z]+$", "^(ab)+$", "^\\d{3}-\\d{4}$", "[(+*)]+", "^(a|b)c*$", "\\(a+\\)+"])
    expect([plain, riskyPattern(plain)]).toEqual([plain, false]);
});

it("/mcp shows a server's stderr lines under one column: a tab does not indent by the terminal's tab stops", async () => {
  const mute: McpServerConfig = {
    name: "mute",
    source: "test",
    transport: {
      kind: "stdio",
      command: process.execPath,
      args: ["-e", "process.stderr.write('booting\\n\\tat step one  \\r\\n  then two\\n'); process.stdin.resume()"],
    },
  };
  const servers = McpServers.start([mute], { startupTimeoutMs: 1_000, graceMs: 200 });
  opened.push(servers);
  await servers.ready();
  expect(servers.describe().split("\n").slice(1)).toEqual([
    "  stderr: booting",
    "  stderr:   at step one",
    "  stderr:   then two",
  ]);
}, 30_000);
