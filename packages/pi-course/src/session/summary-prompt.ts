/**
 * What a compaction asks the model (chapter 11): the conversation being cut, as plain text, and
 * a prompt for a structured summary; plus the files the cut part touched, taken from its tool
 * calls by code (not by the model), so they survive any number of compactions.
 */
import type { AgentMessage, AssistantMessage, Context, ToolResultMessage, UserMessage } from "../types.js";

/** The longest tool result (in characters) copied into the summary request; the rest is elided. */
export const MAX_RESULT_CHARS = 2_000;

/** Tools whose `path` argument counts as a file read / a file changed. */
const READING_TOOLS = new Set(["read", "ls", "grep", "find"]);
const WRITING_TOOLS = new Set(["write", "edit"]);

const SYSTEM_PROMPT =
  "You condense coding-agent conversations into summaries that another session can continue " +
  "from without the original messages. You do not take part in the conversation: you do not " +
  "answer its questions, carry on its work or call tools. Reply with the summary alone, in the " +
  "format you are given.";

const FORMAT = `Use exactly these Markdown sections, in this order; write "none" under a section with nothing to say:

## Goal
What the user wants to achieve, in one to three sentences.

## Constraints
Requirements and preferences the user stated: languages, versions, style, things not to do.

## Progress
### Done
- Finished steps, each with its outcome.
### In progress
- What was under way when the conversation was cut, and how far it got.

## Decisions
- Choices made and the reason for each.

## Files
- Each file read or changed, with what changed and why.

## Open work
- Problems not yet solved, questions not yet answered, failing checks.

## Next steps
1. What to do next, in order.

Copy file paths, function names, commands and error messages exactly.`;

/** The request for a summary: a system prompt and one user message, no tools. */
export function summaryRequest(conversation: string, previousSummary?: string, instructions?: string): Context {
  const parts = [`<conversation>\n${conversation}\n</conversation>`];
  if (previousSummary !== undefined) {
    parts.push(
      `<previous-summary>\n${previousSummary}\n</previous-summary>`,
      "The conversation above continues the work described in the previous summary. Write one summary " +
        "of both: keep everything the previous summary says that still holds, add what is new, move " +
        "finished work from In progress to Done, and bring Next steps up to date.",
    );
  } else {
    parts.push("Summarise the conversation above.");
  }
  parts.push(
    "The most recent messages are not shown here; they stay in the context after your summary. If " +
      "the conversation above stops in the middle of a task, describe exactly where it stopped.",
    FORMAT,
  );
  if (instructions !== undefined && instructions.trim() !== "")
    parts.push(`Pay particular attention to: ${instructions.trim()}`);
  return {
    systemPrompt: SYSTEM_PROMPT,
    messages: [{ role: "user", content: [{ type: "text", text: parts.join("\n\n") }], timestamp: 0 }],
  };
}

/**
 * The messages as labelled plain text, one block per message: `[User]`, `[Assistant]`,
 * `[Tool call]` (name and JSON arguments), `[Tool result]` / `[Tool error]` (cut to
 * `MAX_RESULT_CHARS`), `[Assistant turn failed]`, and `[<role>]` with the JSON of a custom message.
 * Reasoning is left out.
 */
export function serializeConversation(messages: readonly AgentMessage[]): string {
  const lines: string[] = [];
  for (const message of messages) {
    switch (message.role) {
      case "user":
        lines.push(`[User]: ${textOf((message as UserMessage).content)}`);
        break;
      case "assistant": {
        const assistant = message as AssistantMessage;
        const text = textOf(assistant.content);
        if (assistant.stopReason === "error" || assistant.stopReason === "aborted") {
          lines.push(
            `[Assistant turn failed (${assistant.stopReason}: ${assistant.errorMessage ?? "no message"})]: ${text}`,
          );
          break;
        }
        if (text !== "") lines.push(`[Assistant]: ${text}`);
        for (const block of assistant.content) {
          if (block.type === "toolCall") {
            lines.push(`[Tool call]: ${block.name}(${block.rawArguments ?? JSON.stringify(block.arguments)})`);
          }
        }
        break;
      }
      case "toolResult": {
        const result = message as ToolResultMessage;
        lines.push(`[Tool ${result.isError ? "error" : "result"} ${result.toolName}]: ${clip(textOf(result.content))}`);
        break;
      }
      default:
        lines.push(`[${String((message as { role: unknown }).role)}]: ${clip(JSON.stringify(message))}`);
    }
  }
  return lines.join("\n\n");
}

function textOf(content: readonly { type: string; text?: string }[]): string {
  return content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

function clip(text: string): string {
  if (text.length <= MAX_RESULT_CHARS) return text;
  return `${text.slice(0, MAX_RESULT_CHARS)}… [${text.length - MAX_RESULT_CHARS} more characters left out]`;
}

/** Files read and changed by the tool calls of `messages`, merged with those of a previous summary. */
export function filesTouched(
  messages: readonly AgentMessage[],
  previousSummary?: string,
): { read: string[]; modified: string[] } {
  const read = new Set(listIn(previousSummary, "files-read"));
  const modified = new Set(listIn(previousSummary, "files-modified"));
  for (const message of messages) {
    if (message.role !== "assistant") continue;
    for (const block of (message as AssistantMessage).content) {
      if (block.type !== "toolCall") continue;
      const path = (block.arguments as { path?: unknown } | null)?.path;
      if (typeof path !== "string" || path === "") continue;
      if (WRITING_TOOLS.has(block.name)) modified.add(path);
      else if (READING_TOOLS.has(block.name)) read.add(path);
    }
  }
  for (const path of modified) read.delete(path);
  return { read: [...read].sort(), modified: [...modified].sort() };
}

/** The files section appended to a summary ("" when no file was touched). */
export function formatFilesSection(files: { read: string[]; modified: string[] }): string {
  if (files.read.length === 0 && files.modified.length === 0) return "";
  return (
    `\n\n<files-read>\n${files.read.join("\n")}\n</files-read>` +
    `\n<files-modified>\n${files.modified.join("\n")}\n</files-modified>`
  );
}

function listIn(summary: string | undefined, tag: string): string[] {
  if (summary === undefined) return [];
  // the last such block: the one code appended (a model may quote the tags in its own text)
  const blocks = [...summary.matchAll(new RegExp(`<${tag}>\\n([\\s\\S]*?)\\n?</${tag}>`, "g"))];
  const last = blocks.at(-1);
  return last ? last[1]!.split("\n").filter((line) => line !== "") : [];
}
