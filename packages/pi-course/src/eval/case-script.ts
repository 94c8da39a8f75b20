/**
 * Chapter 14: `script.json`, the scripted model that plays one case offline.
 *
 * A shipped case must run in CI without a model server, so it carries the model's side of the
 * conversation: the turns a (well- or badly-behaved) model would take. The eval harness reads it
 * only when no server is configured; the CLI never does. The format:
 *
 * ```json
 * {
 *   "turns": [
 *     { "text": "Let me look.", "toolCalls": [{ "name": "read", "arguments": { "path": "a.js" } }] },
 *     { "text": "Done." }
 *   ]
 * }
 * ```
 *
 * A turn with `toolCalls` ends with `toolUse`, one without with `stop`; `{ "error": "…" }` is
 * a failed model call (what a server that does not answer looks like); `usage` (`input`,
 * `output`) is optional. Instead of `turns`, `variants: [{ "turns": […] }, …]` gives several
 * scripts: run k of `--repeat` plays variant k mod n, so a flaky model is reproducible and its
 * pass rate exact. `delayMs` slows the deltas down.
 */
import { readFile } from "node:fs/promises";
import { assistantMessage } from "../messages.js";
import { ScriptedModel, type ScriptedTurn } from "../models/scripted-model.js";
import type { AssistantContent } from "../types.js";
import { CaseFormatError } from "./case-format.js";

/** One turn of a script, as written in script.json. */
export interface ScriptTurn {
  text?: string;
  toolCalls?: { name: string; arguments: unknown }[];
  error?: string;
  usage?: { input: number; output: number };
}

/** A script.json, checked. */
export interface CaseScript {
  variants: ScriptTurn[][];
  delayMs: number;
}

/** Checks script.json's text (`where` names it in errors). Throws `CaseFormatError`. */
export function parseCaseScript(text: string, where: string): CaseScript {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new CaseFormatError(`${where} is not valid JSON (${(error as Error).message}).`);
  }
  const record = raw as Record<string, unknown>;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new CaseFormatError(`${where} must hold one JSON object with "turns" (or "variants").`);
  }
  for (const key of Object.keys(record)) {
    if (!["turns", "variants", "delayMs"].includes(key)) {
      throw new CaseFormatError(`${where}: unknown key "${key}"; the keys are turns, variants and delayMs.`);
    }
  }
  if ((record.turns === undefined) === (record.variants === undefined)) {
    throw new CaseFormatError(`${where}: give exactly one of "turns" and "variants".`);
  }
  const lists: unknown[] =
    record.turns !== undefined
      ? [record.turns]
      : Array.isArray(record.variants)
        ? record.variants.map((v) => (v as { turns?: unknown } | null)?.turns)
        : [];
  if (lists.length === 0) throw new CaseFormatError(`${where}: "variants" must be a non-empty list of {"turns": […]}.`);
  const variants = lists.map((list, v) => {
    const at = record.variants !== undefined ? `variant ${v}` : "turns";
    if (!Array.isArray(list) || list.length === 0)
      throw new CaseFormatError(`${where}: ${at} must be a non-empty list of turns.`);
    return list.map((turn, t) => checkTurn(turn, `${where}: ${at}, turn ${t}`));
  });
  const delayMs = record.delayMs ?? 0;
  if (typeof delayMs !== "number" || !(delayMs >= 0))
    throw new CaseFormatError(`${where}: "delayMs" must be a number ≥ 0.`);
  return { variants, delayMs };
}

function checkTurn(turn: unknown, where: string): ScriptTurn {
  if (typeof turn !== "object" || turn === null || Array.isArray(turn))
    throw new CaseFormatError(`${where} must be an object.`);
  const t = turn as Record<string, unknown>;
  for (const key of Object.keys(t)) {
    if (!["text", "toolCalls", "error", "usage"].includes(key)) {
      throw new CaseFormatError(`${where}: unknown key "${key}"; a turn has text, toolCalls, error and usage.`);
    }
  }
  if (t.error !== undefined) {
    if (typeof t.error !== "string" || t.error === "" || t.toolCalls !== undefined) {
      throw new CaseFormatError(`${where}: "error" is a non-empty message, on a turn without toolCalls.`);
    }
  }
  if (t.text !== undefined && typeof t.text !== "string")
    throw new CaseFormatError(`${where}: "text" must be a string.`);
  if (t.toolCalls !== undefined) {
    const calls = t.toolCalls;
    if (
      !Array.isArray(calls) ||
      calls.some(
        (c) =>
          typeof c !== "object" ||
          c === null ||
          typeof (c as { name?: unknown }).name !== "string" ||
          !("arguments" in c),
      )
    ) {
      throw new CaseFormatError(`${where}: "toolCalls" must be a list of {"name": "…", "arguments": {…}}.`);
    }
  }
  if (t.text === undefined && t.toolCalls === undefined && t.error === undefined) {
    throw new CaseFormatError(`${where} says nothing: give text, toolCalls or error.`);
  }
  const usage = t.usage as { input?: unknown; output?: unknown } | undefined;
  if (
    usage !== undefined &&
    (typeof usage !== "object" || usage === null || typeof usage.input !== "number" || typeof usage.output !== "number")
  ) {
    throw new CaseFormatError(`${where}: "usage" must be {"input": N, "output": N}.`);
  }
  return t as ScriptTurn;
}

/** Reads and checks the script.json at `file`. */
export async function loadCaseScript(file: string): Promise<CaseScript> {
  return parseCaseScript(await readFile(file, "utf8"), file);
}

/**
 * The `ScriptedModel` that plays variant `repeatIndex mod n` of `script`. Tool-call ids are
 * `call_<turn>_<index>`, unique within the run.
 */
export function createCaseModel(script: CaseScript, repeatIndex: number, caseName: string): ScriptedModel {
  const variant = script.variants[repeatIndex % script.variants.length]!;
  const turns: ScriptedTurn[] = variant.map((turn, t) => {
    if (turn.error !== undefined)
      return {
        stopReason: "error",
        errorMessage: turn.error,
        ...(turn.text !== undefined && { partialText: turn.text }),
      };
    const content: AssistantContent[] = [];
    if (turn.text !== undefined) content.push({ type: "text", text: turn.text });
    (turn.toolCalls ?? []).forEach((call, i) =>
      content.push({ type: "toolCall", id: `call_${t}_${i}`, name: call.name, arguments: call.arguments }),
    );
    const input = turn.usage?.input ?? 0;
    const output = turn.usage?.output ?? 0;
    return assistantMessage(content, (turn.toolCalls ?? []).length > 0 ? "toolUse" : "stop", {
      usage: { input, output, totalTokens: input + output },
    });
  });
  return new ScriptedModel(turns, { provider: "scripted", id: `script:${caseName}`, delayMs: script.delayMs });
}
