/**
 * Checks a scripted turn's tool calls against the tools the request declares, so that a typo in
 * a script fails on the turn where it is written, not three calls later when the loop's own
 * validation sends an error result back and the rest of the script no longer fits.
 *
 * The check is strict JSON Schema (TypeBox's compiled validator over `context.tools[i].parameters`):
 * it does not apply the loop's coercions (`"3"` for a number) nor a tool's `prepareArguments`, so
 * a script that plays such a call on purpose turns the check off (`checkToolCalls: false`).
 */
import type { TSchema } from "typebox";
import { Compile, type Validator } from "typebox/compile";
import type { AssistantMessage, Context, ToolDefinition } from "../types.js";

/**
 * Compiled validators by the schema's JSON text: the model is given a copy of the context, so the
 * same tools arrive as new objects with every request. Bounded: the oldest is dropped past 256.
 */
const validators = new Map<string, Validator | string>();

/**
 * What is wrong with the tool calls of scripted turn `turn` (1-based), or undefined when nothing
 * is: a call to a tool the request does not declare, or arguments its schema refuses. Checked only
 * when the request declares tools; a call with `argumentsError` (scripted malformed JSON) and the
 * calls of a `length` turn (cut off, never completed) are played as they are.
 */
export function scriptedToolCallProblem(script: AssistantMessage, context: Context, turn: number): string | undefined {
  const tools = context.tools ?? [];
  if (tools.length === 0 || script.stopReason === "length") return undefined;
  for (const block of script.content) {
    if (block.type !== "toolCall" || block.argumentsError !== undefined) continue;
    const head = `ScriptedModel: scripted turn ${turn}: tool call "${block.name}"`;
    const tool = tools.find((t) => t.name === block.name);
    if (tool === undefined) {
      const names = tools.map((t) => t.name).join(", ");
      return `${head} names a tool the request does not declare (it declares: ${names}). ${FIX}`;
    }
    const wrong = argumentProblems(tool, block.arguments);
    if (wrong !== undefined) return `${head} arguments: ${wrong}. ${FIX}`;
  }
  return undefined;
}

const FIX = "Fix the script, or pass { checkToolCalls: false } to ScriptedModel to play such a call on purpose.";

/** `/path must be string; /count is required`, or undefined when the schema accepts them. */
function argumentProblems(tool: ToolDefinition, args: unknown): string | undefined {
  const key = JSON.stringify(tool.parameters);
  let validator = validators.get(key);
  if (validator === undefined) {
    try {
      validator = Compile(tool.parameters as TSchema) as unknown as Validator;
    } catch (error) {
      validator = `its parameters schema cannot be compiled (${error instanceof Error ? error.message : String(error)})`;
    }
    if (validators.size >= 256) validators.delete(validators.keys().next().value!);
    validators.set(key, validator);
  }
  if (typeof validator === "string") return validator;
  if (validator.Check(args)) return undefined;
  const problems: string[] = [];
  for (const error of validator.Errors(args)) {
    if (error.keyword === "required") {
      const missing = (error.params as { requiredProperties?: string[] }).requiredProperties ?? [];
      for (const name of missing) problems.push(`${error.instancePath}/${name} is required`);
    } else {
      problems.push(`${error.instancePath || "(root)"} ${error.message}`);
    }
  }
  return [...new Set(problems)].join("; ") || "the schema refuses them";
}
