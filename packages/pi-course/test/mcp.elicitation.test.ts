/**
 * Elicitation against the real server-everything (`trigger-elicitation-request` asks for a form
 * whose fields have defaults): an accepted answer gets the defaults of the fields it leaves out,
 * as the specification asks of a client; a declined one goes back as it is.
 */
import { afterEach, expect, it } from "vitest";
import { withElicitationDefaults } from "../src/mcp/client.js";
import { elicitationForm, fieldHint, readFieldAnswer } from "../src/mcp/elicitation-form.js";
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

it("a form is read from the requested schema as the specification restricts it, and each typed answer is checked against its field", () => {
  const form = elicitationForm({
    message: "Order",
    requestedSchema: {
      type: "object",
      properties: {
        code: { type: "string", minLength: 2, maxLength: 3 },
        at: { type: "string", format: "date-time", title: "When" },
        count: { type: "integer", minimum: 1 },
        sizes: { type: "array", items: { enum: ["s", "m", "l"] }, minItems: 2 },
      },
      required: ["code", "count"],
    },
  });
  if ("problem" in form) throw new Error(form.problem);
  const [code, at, count, sizes] = form.fields;
  expect(form.fields.map((field) => [field.name, field.label, field.kind, field.required])).toEqual([
    ["code", "code", "text", true],
    ["at", "When", "text", false],
    ["count", "count", "integer", true],
    ["sizes", "sizes", "choices", false],
  ]);
  expect(fieldHint(code!)).toBe("text, 2-3 characters");
  expect(readFieldAnswer(code!, "")).toEqual({ problem: "code is required" });
  expect(readFieldAnswer(code!, "abcd")).toEqual({ problem: "give at most 3 characters" });
  expect(readFieldAnswer(code!, "  ab ")).toEqual({ value: "ab" });
  expect(readFieldAnswer(at!, "")).toEqual({ omitted: true });
  expect(readFieldAnswer(at!, "2026-12-05T10:00")).toEqual({
    problem: '"2026-12-05T10:00" is not a date and time (YYYY-MM-DDTHH:MM:SSZ)',
  });
  expect(readFieldAnswer(at!, "2026-12-05T10:00:00Z")).toEqual({ value: "2026-12-05T10:00:00Z" });
  expect(readFieldAnswer(count!, "1.5")).toEqual({ problem: "give a whole number" });
  expect(readFieldAnswer(count!, "0")).toEqual({ problem: "give at least 1" });
  expect(readFieldAnswer(count!, "ten")).toEqual({ problem: '"ten" is not a number' });
  expect(readFieldAnswer(sizes!, "m")).toEqual({ problem: "choose at least 2" });
  expect(readFieldAnswer(sizes!, "3, s, l")).toEqual({ value: ["l", "s"] });
  expect(readFieldAnswer(sizes!, "1, xl")).toEqual({ problem: '"xl" is not one of 1-3' });
  // what a form may not hold is named, so the front end can decline instead of guessing
  expect(elicitationForm({ requestedSchema: { type: "object", properties: { address: { type: "object" } } } })).toEqual(
    {
      problem:
        'its field "address" has type "object", which a form may not ask for (text, number, integer, boolean or a choice)',
    },
  );
});
