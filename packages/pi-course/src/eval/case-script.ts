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
import { Type } from "typebox";
import { assistantMessage } from "../messages.js";
import { ScriptedModel, type ScriptedTurn } from "../models/scripted-model.js";
import type { AssistantContent } from "../types.js";
import { parseJson, readTextFile } from "../base/read-json.js";
import { CaseFormatError, casePlace } from "./case-format.js";

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

const TurnSchema = Type.Object(
  {
    text: Type.Optional(Type.String()),
    toolCalls: Type.Optional(
      Type.Array(Type.Object({ name: Type.String(), arguments: Type.Unknown() }), {
        expected: 'a list of {"name": "…", "arguments": {…}}',
      }),
    ),
    error: Type.Optional(Type.String({ minLength: 1, expected: "a non-empty message" })),
    usage: Type.Optional(
      Type.Object({ input: Type.Number(), output: Type.Number() }, { expected: '{"input": N, "output": N}' }),
    ),
  },
  { additionalProperties: false, expected: "a turn: {text, toolCalls, error, usage}" },
);
const TurnsSchema = Type.Array(TurnSchema, { minItems: 1, expected: "a non-empty list of turns" });

/** What script.json may hold; that exactly one of `turns` and `variants` is given is checked after. */
const ScriptSchema = Type.Object(
  {
    turns: Type.Optional(TurnsSchema),
    variants: Type.Optional(
      Type.Array(Type.Object({ turns: TurnsSchema }), { minItems: 1, expected: 'a non-empty list of {"turns": […]}' }),
    ),
    delayMs: Type.Optional(Type.Number({ minimum: 0, expected: "a number ≥ 0" })),
  },
  { additionalProperties: false, expected: 'one JSON object with "turns" (or "variants")' },
);

/** Checks script.json's text (`where` names it in errors). Throws `CaseFormatError`. */
export function parseCaseScript(text: string, where: string): CaseScript {
  const place = casePlace(where);
  const script = parseJson(text, ScriptSchema, place);
  if ((script.turns === undefined) === (script.variants === undefined)) {
    throw new CaseFormatError(`${where}: give exactly one of "turns" and "variants".`);
  }
  const variants = script.turns !== undefined ? [script.turns] : script.variants!.map((v) => v.turns);
  variants.forEach((turns, v) =>
    turns.forEach((turn, t) => {
      const at = `${where}: ${script.variants !== undefined ? `variants[${v}].turns` : "turns"}[${t}]`;
      if (turn.error !== undefined && turn.toolCalls !== undefined) {
        throw new CaseFormatError(`${at}: "error" is a failed model call: it goes on a turn without toolCalls.`);
      }
      if (turn.text === undefined && turn.toolCalls === undefined && turn.error === undefined) {
        throw new CaseFormatError(`${at} says nothing: give text, toolCalls or error.`);
      }
    }),
  );
  return { variants, delayMs: script.delayMs ?? 0 };
}

/** Reads and checks the script.json at `file`. */
export async function loadCaseScript(file: string): Promise<CaseScript> {
  return parseCaseScript(readTextFile(file, casePlace(file)), file);
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
