/**
 * Elicitation against the real server-everything (`trigger-elicitation-request` asks for a form
 * whose fields have defaults): an accepted answer gets the defaults of the fields it leaves out,
 * as the specification asks of a client; a declined one goes back as it is.
 */
import { afterEach, expect, it } from "vitest";
import { withElicitationDefaults } from "../src/mcp/client.js";
import { McpServers } from "../src/mcp/servers.js";
import { serverEntry } from "./support/mcp.js";

const opened: McpServers[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((servers) => servers.close()));
});

it("an accepted form gets the requested schema's defaults for the fields it leaves out; a decline is sent as it is", async () => {
  const answers: Record<string, unknown>[] = [
    { action: "accept", content: { name: "Ada", integer: 7 } },
    { action: "decline" },
  ];
  const asked: string[] = [];
  const servers = McpServers.start(
    [
      {
        name: "e",
        source: "test",
        transport: { kind: "stdio", command: process.execPath, args: [serverEntry("server-everything"), "stdio"] },
      },
    ],
    {
      startupTimeoutMs: 20_000,
      graceMs: 200,
      onElicitation: async (name, params) => {
        asked.push(`${name}: ${String(params.message)}`);
        return answers.shift()!;
      },
    },
  );
  opened.push(servers);
  await servers.ready();
  const tool = servers.tools.find((candidate) => candidate.name === "mcp__e__trigger-elicitation-request")!;
  const text = async () =>
    (await tool.execute("call", {}, undefined)).content
      .map((block) => (block.type === "text" ? block.text : ""))
      .join("\n");
  const accepted = await text();
  expect(accepted).toContain("- Name: Ada"); // given
  expect(accepted).toContain("- Favorite Integer: 7"); // given wins over the default 42
  expect(accepted).toContain("- Favorite Number: 3.14"); // left out: its default
  expect(accepted).toContain(`"legacyTitledEnum": "pet-1"`); // in the raw result the server shows
  expect(await text()).toContain("User declined to provide the requested information.");
  expect(asked).toHaveLength(2);
  expect(asked[0]).toMatch(/^e: /);
  expect(withElicitationDefaults({}, { action: "cancel" })).toEqual({ action: "cancel" });
}, 60_000);
