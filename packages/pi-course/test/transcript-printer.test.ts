/** `transcriptPrinter`: a live transcript of an `Agent` in one line, rendered as the CLI renders it. */
import { Type } from "typebox";
import { expect, it } from "vitest";
import { Agent, ScriptedModel, assistantMessage, defineTool, transcriptPrinter } from "../src/index.js";

it("transcriptPrinter renders the answer, each tool call with its result, and errors, as the CLI does", async () => {
  const shout = defineTool({
    name: "shout",
    label: "Shout",
    description: "Upper-cases the text.",
    parameters: Type.Object({ text: Type.String() }),
    execute: async (_id, { text }) => ({ content: [{ type: "text", text: text.toUpperCase() }], details: undefined }),
  });
  const model = new ScriptedModel([
    assistantMessage([{ type: "toolCall", id: "c1", name: "shout", arguments: { text: "hello" } }], "toolUse"),
    assistantMessage([{ type: "text", text: "It said HELLO." }], "stop"),
    { stopReason: "error", errorMessage: "the server is down" },
  ]);
  const agent = new Agent({ initialState: { model, tools: [shout] } });
  let out = "";
  agent.subscribe(transcriptPrinter({ write: (text) => (out += text), color: false }));
  await agent.prompt("shout hello");
  await agent.prompt("again");
  const lines = out.replace(/\(\d+(\.\d+)?\s*m?s\)/g, "(T)").split("\n");
  expect(lines).toEqual([
    '⚙ shout {"text":"hello"}',
    "✓ shout (T)",
    expect.stringContaining("HELLO"),
    "It said HELLO.",
    expect.stringMatching(/the server is down/),
    "",
  ]);
});
