/**
 * Chapter 17 bench: the hand-written MCP client of @pi/course against the official SDK's
 * `Client` (@modelcontextprotocol/sdk 1.32.2), both over stdio to the same reference server,
 * `@modelcontextprotocol/server-everything` (a separate process each, started once).
 * Bar (issue 37): ours <= 1.0x the SDK's time on
 *
 * (a) 1,000 `tools/call` round trips to `echo`, one after the other (each waits for its answer);
 *
 * and, reported without a bar, (b) the start-up of 3 servers in parallel: spawn, `initialize`,
 * `notifications/initialized`, `tools/list`, then close (stdin closed; an idle server exits at
 * once). Ours through `McpServers` (what the CLI uses), the SDK's with three `Client`s.
 *
 * Most of (a) is the server's own time (the SDK's server, zod validation, the pipe); the client's
 * part is framing, correlation and JSON. Both clients validate nothing of the result here: the SDK
 * checks `structuredContent` only for tools with an `outputSchema`, and `echo` has none.
 */
import { createRequire } from "node:module";
import path from "node:path";
import { McpClient, McpServers, StdioTransport, type McpServerConfig } from "@pi/course";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { measure, printTable } from "./harness.js";

const CALLS = Number(process.env.BENCH_CALLS ?? 1_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const STARTUP_RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 5);

const require = createRequire(import.meta.url);
const everything = path.join(
  path.dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")),
  "dist",
  "index.js",
);
const args = [everything, "stdio"];

async function oursClient(): Promise<McpClient> {
  const client = new McpClient(new StdioTransport({ command: process.execPath, args }));
  await client.connect({ timeoutMs: 30_000 });
  return client;
}

async function sdkClient(): Promise<Client> {
  const client = new Client({ name: "bench", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command: process.execPath, args, stderr: "pipe" }));
  return client;
}

/** The text of an echo result, to check both did the work. */
function echoed(result: object): string {
  const first = ((result as { content?: { type: string; text?: string }[] }).content ?? [])[0];
  return first?.text ?? "";
}

const ours = await oursClient();
const sdk = await sdkClient();
try {
  const calls = await measure(
    [
      {
        name: "ours",
        run: async () => {
          let last = "";
          for (let i = 0; i < CALLS; i++) last = echoed(await ours.callTool("echo", { message: `m${i}` }));
          return last;
        },
      },
      {
        name: "sdk",
        run: async () => {
          let last = "";
          for (let i = 0; i < CALLS; i++)
            last = echoed(await sdk.callTool({ name: "echo", arguments: { message: `m${i}` } }));
          return last;
        },
      },
    ],
    { warmup: WARMUP, runs: RUNS },
  );
  for (const result of calls) {
    if (result.last !== `Echo: m${CALLS - 1}`) throw new Error(`${result.name} did not echo: ${String(result.last)}`);
  }
  printTable(`${CALLS.toLocaleString("en")} tools/call round trips to server-everything's echo over stdio`, calls, [
    { label: "ours / sdk", num: "ours", den: "sdk", bar: "<=", value: 1.0 },
  ]);
} finally {
  await Promise.all([ours.close(), sdk.close()]);
}

const configs: McpServerConfig[] = ["a", "b", "c"].map((name) => ({
  name,
  source: "bench",
  transport: { kind: "stdio", command: process.execPath, args },
}));
const startup = await measure(
  [
    {
      name: "ours",
      run: async () => {
        const servers = McpServers.start(configs, { startupTimeoutMs: 30_000 });
        await servers.ready();
        const tools = servers.tools.length;
        await servers.close();
        return tools;
      },
    },
    {
      name: "sdk",
      run: async () => {
        const clients = await Promise.all(
          configs.map(async () => {
            const client = await sdkClient();
            const { tools } = await client.listTools();
            return { client, tools: tools.length };
          }),
        );
        await Promise.all(clients.map(({ client }) => client.close()));
        return clients.reduce((sum, { tools }) => sum + tools, 0);
      },
    },
  ],
  { warmup: 1, runs: STARTUP_RUNS },
);
printTable("start 3 servers in parallel (spawn, initialize, tools/list), then close", startup, [
  { label: "ours / sdk", num: "ours", den: "sdk" },
]);
