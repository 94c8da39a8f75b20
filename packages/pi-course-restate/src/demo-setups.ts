/**
 * The README's example: a scripted conversation with one slow tool that is not safe to replay,
 * so a person has time to kill the worker running it and watch another worker finish the run.
 *
 * `demo`: the model asks for `slow_write` (waits `options.seconds`, default 5, then appends a
 * line to `options.file`), then for `read_back` (replay-safe), then answers. Each worker says on
 * its error output what it runs.
 */
import { appendFile, readFile } from "node:fs/promises";
import { type AgentMessage, assistantMessage, defineTool, ScriptedModel } from "@pi/course";
import { Type } from "typebox";
import type { RunSetups } from "./agent-run.js";

interface DemoOptions {
  file: string;
  seconds?: number;
}

const say = (text: string) => process.stderr.write(`worker ${process.pid}: ${text}\n`);

export const setups: RunSetups = {
  demo: ({ runId, options }) => {
    const { file, seconds = 5 } = options as DemoOptions;
    if (typeof file !== "string") throw new Error('the demo setup needs options {"file": "<path>"}');
    const slowWrite = defineTool({
      name: "slow_write",
      label: "slow write",
      description: "Waits, then appends a line to the demo file.",
      parameters: Type.Object({ line: Type.String() }),
      execute: async (toolCallId, { line }) => {
        say(`${runId} ${toolCallId}: slow_write starts, writes in ${seconds} s`);
        await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
        await appendFile(file, `${line}\n`);
        say(`${runId} ${toolCallId}: slow_write wrote its line`);
        return { content: [{ type: "text", text: `wrote "${line}"` }], details: undefined };
      },
    });
    const readBack = defineTool({
      name: "read_back",
      label: "read back",
      description: "Reads the demo file.",
      parameters: Type.Object({}),
      replay: "safe",
      execute: async (toolCallId) => {
        say(`${runId} ${toolCallId}: read_back`);
        const text = await readFile(file, "utf8").catch(() => "");
        return { content: [{ type: "text", text: text || "(empty)" }], details: undefined };
      },
    });
    const model = ScriptedModel.repeat(({ messages }) => {
      const results = messages.filter((m: AgentMessage) => m.role === "toolResult");
      say(`${runId}: model turn ${results.length}`);
      if (results.length === 0) {
        return assistantMessage(
          [{ type: "toolCall", id: "w1", name: "slow_write", arguments: { line: runId } }],
          "toolUse",
        );
      }
      if (results.length === 1) {
        return assistantMessage([{ type: "toolCall", id: "r1", name: "read_back", arguments: {} }], "toolUse");
      }
      const [write, read] = results;
      const said = (m: typeof write) =>
        m?.role === "toolResult" ? m.content.map((c) => ("text" in c ? c.text : "")).join("") : "";
      return assistantMessage(
        [{ type: "text", text: `slow_write said: ${said(write)}\nthe file holds: ${said(read)}` }],
        "stop",
      );
    });
    return { model, tools: [slowWrite, readBack] };
  },
};
