/**
 * Tools: the pipeline from a model's tool call to the arguments a tool's `execute` receives,
 * and what a model is shown of a tool.
 *
 *   toolCall ──copy──▶ prepareArguments (the tool's repair) ──▶ coerce ──▶ validate ──▶ execute
 *
 * The tool-call block in the transcript is never changed: every step works on a copy. A failure
 * anywhere is an error whose message the model can read and act on (which field, why, and
 * what it sent).
 */
import type { Static, TSchema } from "typebox";
import type { Validator } from "typebox/compile";
import { coerceValue } from "./tool-coercion.js";
import type { AgentTool, AgentToolResult, AgentToolUpdateCallback, ToolCall, ToolDefinition } from "../types.js";
import { PiCourseError, errorText } from "../base/errors.js";
import { validatorFor } from "../base/schema-validator.js";

/** One failing field: a JSON Pointer into the arguments (`""` is the whole object) and why. */
export interface ToolArgumentIssue {
  path: string;
  message: string;
}

/**
 * Thrown by `validateToolArguments` / `prepareToolArguments`. The message lists each failing
 * field by path and shows the received arguments, so that, as a tool result, it lets a model
 * correct its call. One line per issue, its path then the validator's words: `  - /a: must be
 * number`, `  - /b: is required`, `  - (root): must be object`; or, when the arguments could not
 * be copied, the reason instead: `the arguments are not plain JSON data (a function is not JSON)`.
 */
export class ToolArgumentsError extends PiCourseError {
  override readonly name = "ToolArgumentsError";
  /** Stable: `"TOOL_ARGUMENTS"`. */
  override readonly code = "TOOL_ARGUMENTS";

  constructor(
    /** The tool the call named. */
    readonly toolName: string,
    /** Each failing field; empty when the arguments could not be read at all. */
    readonly issues: ToolArgumentIssue[],
    /** The arguments as the call gave them (before any repair). */
    readonly received: unknown,
    /** Replaces the list of issues in the message (e.g. malformed JSON). */
    reason?: string,
  ) {
    super(
      `Invalid arguments for tool "${toolName}":\n` +
        (reason ?? issues.map((issue) => `  - ${issue.path || "(root)"}: ${issue.message}`).join("\n")) +
        `\nReceived arguments: ${show(received)}`,
    );
  }
}

/**
 * Checks a call's arguments against the tool's schema and returns them as a new object (neither
 * `toolCall` nor its arguments are changed), coerced only where the schema asks for another JSON
 * type and models commonly slip: a string holding a JSON number becomes a `number`/`integer`
 * (`"42"` → `42`; `"4.5"` stays for an integer); `"true"`/`"false"` (any case) a `boolean`; a
 * finite number or boolean a `string`; a string holding JSON of the kind an `object`/`array` wants
 * is parsed; the string spelling of a number or boolean `const`/`enum` member becomes it; `null`
 * for an optional property that does not accept it removes the property. Nothing else is guessed
 * (no `0`/`1` to boolean, no wrapping into an array, no default); a union keeps a value that fits
 * a branch, else takes the first branch its coercion fits.
 *
 * Throws `ToolArgumentsError` listing each failing field by path, with the received arguments.
 */
export function validateToolArguments<TParameters extends TSchema>(
  tool: AgentTool<TParameters, any>,
  toolCall: ToolCall,
): Static<TParameters> {
  // #region lab 6.1 validateToolArguments
  const copy = copyArguments(tool, toolCall);
  const validator = validatorFor(tool.parameters);
  if (validator.Check(copy)) return copy as Static<TParameters>; // the common case: nothing to repair
  const coerced = coerceValue(tool.parameters, copy, checkAgainst);
  if (validator.Check(coerced)) return coerced as Static<TParameters>;
  throw new ToolArgumentsError(tool.name, issuesOf(validator, coerced), toolCall.arguments);
  // #endregion
}

/** A copy of the call's arguments (the call itself is never changed); refuses what is not plain JSON data. */
function copyArguments(tool: AgentTool<any, any>, toolCall: ToolCall): unknown {
  try {
    return copyJson(toolCall.arguments);
  } catch (error) {
    throw new ToolArgumentsError(
      tool.name,
      [],
      toolCall.arguments,
      `the arguments are not plain JSON data (${messageOf(error)})`,
    );
  }
}

/**
 * The whole pipeline before `execute`: refuses a call whose raw JSON was malformed
 * (`toolCall.argumentsError`), gives a copy of the arguments to the tool's `prepareArguments`,
 * then validates (and coerces) what it returns. The transcript's tool call is never changed.
 *
 * Throws `ToolArgumentsError` (or the error `prepareArguments` threw) with a readable message.
 */
export function prepareToolArguments<TParameters extends TSchema>(
  tool: AgentTool<TParameters, any>,
  toolCall: ToolCall,
): Static<TParameters> {
  // #region lab 6.2 prepareToolArguments
  if (toolCall.argumentsError !== undefined) {
    // argumentsError is already written for the model (see parseToolArguments): said once.
    throw new ToolArgumentsError(tool.name, [], toolCall.rawArguments ?? toolCall.arguments, toolCall.argumentsError);
  }
  if (tool.prepareArguments === undefined) return validateToolArguments(tool, toolCall);
  const copy = copyArguments(tool, toolCall); // the arguments' fault, not the hook's: prepareArguments never ran
  let prepared: unknown;
  try {
    prepared = tool.prepareArguments(copy);
  } catch (error) {
    throw new ToolArgumentsError(tool.name, [], toolCall.arguments, `prepareArguments failed: ${messageOf(error)}`);
  }
  return validateToolArguments(tool, { ...toolCall, arguments: prepared });
  // #endregion
}

/**
 * Declares a tool with its parameter type inferred from `parameters`, so `execute` gets typed
 * `params` in a standalone definition. Returns the tool unchanged.
 *
 * ```ts
 * const echo = defineTool({
 *   name: "echo", label: "Echo", description: "Repeats the text.",
 *   parameters: Type.Object({ text: Type.String() }),
 *   execute: async (_id, { text }) => ({ content: [{ type: "text", text }], details: undefined }),
 * });
 * ```
 */
export function defineTool<TParameters extends TSchema, TDetails = undefined>(
  tool: ToolSpec<TParameters, TDetails>,
): AgentTool<TParameters, TDetails> {
  // The same object: only `onUpdate`'s declared type differs (see ToolSpec).
  return tool as AgentTool<TParameters, TDetails>;
}

/**
 * `AgentTool` as `defineTool` takes it. The one difference: `onUpdate` takes partial results
 * with `details: unknown`. Were it typed by `TDetails`, declaring the parameter would make
 * TypeScript fix `TDetails` (to its default, `undefined`) before it reads what `execute`
 * returns, so `details` could no longer be inferred. Partial results are for UIs and are not
 * checked against `TDetails` either way (`tool_execution_update` carries them as `unknown`).
 * `params` is typed from `parameters` (`Static<typeof parameters>`).
 */
export type ToolSpec<TParameters extends TSchema, TDetails> = Omit<AgentTool<TParameters, TDetails>, "execute"> & {
  execute(
    toolCallId: string,
    // NoInfer: `TParameters` is inferred from `parameters` alone. Inferring it from `params` too
    // made TypeScript relate two `Static<…>` conditional types, ~150,000 types per program.
    params: NoInfer<Static<TParameters>>,
    signal?: AbortSignal,
    onUpdate?: AgentToolUpdateCallback<unknown>,
  ): Promise<AgentToolResult<TDetails>>;
};

/**
 * What a model is shown of a tool: name, description, and the parameters as a plain JSON Schema
 * (TypeBox's hidden markers dropped). The schema copy is made once per schema, frozen and shared.
 */
export function toToolDefinition(tool: AgentTool<any, any>): ToolDefinition {
  // #region lab 6.3 toToolDefinition
  let parameters = plainSchemas.get(tool.parameters);
  if (parameters === undefined) {
    parameters = deepFreeze(JSON.parse(JSON.stringify(tool.parameters)) as Record<string, unknown>);
    plainSchemas.set(tool.parameters, parameters);
  }
  return { name: tool.name, description: tool.description, parameters };
  // #endregion
}

// ---------------------------------------------------------------------------------------------

const plainSchemas = new WeakMap<object, Record<string, unknown>>();

/** For the coercion walker: does a sub-schema accept a value? (false if it cannot be compiled) */
function checkAgainst(schema: Record<string, unknown>, value: unknown): boolean {
  try {
    return validatorFor(schema as TSchema).Check(value);
  } catch {
    return false;
  }
}

/**
 * TypeBox's errors as one issue per failing field: a missing property is reported at its own
 * path, and the per-branch noise of a failed union is folded into the union's own issue.
 */
function issuesOf(validator: Validator, value: unknown): ToolArgumentIssue[] {
  const errors = validator.Errors(value);
  const unions = errors.filter((e) => e.keyword === "anyOf" || e.keyword === "oneOf");
  const issues: ToolArgumentIssue[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    const insideUnion = unions.some((u) => u !== error && error.schemaPath.startsWith(u.schemaPath + "/"));
    if (insideUnion) continue;
    if (error.keyword === "required") {
      const missing = (error.params as { requiredProperties?: string[] }).requiredProperties ?? [];
      for (const name of missing) {
        issues.push({ path: `${error.instancePath}/${escapePointer(name)}`, message: "is required" });
      }
      continue;
    }
    let message = error.message;
    if (error.keyword === "anyOf" || error.keyword === "oneOf") {
      const allowed = errors
        .filter((e) => e.keyword === "const" && e.schemaPath.startsWith(error.schemaPath + "/"))
        .map((e) => JSON.stringify((e.params as { allowedValue: unknown }).allowedValue));
      if (allowed.length > 0) message = `must be one of ${allowed.join(", ")}`;
    } else if (error.keyword === "additionalProperties") {
      const extra = (error.params as { additionalProperties?: string[] }).additionalProperties ?? [];
      message = `must not have additional properties ${extra.join(", ")}`;
    }
    const key = `${error.instancePath}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push({ path: error.instancePath, message });
  }
  return issues;
}

function escapePointer(name: string): string {
  return name.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** The received arguments for a message: JSON, cut at 2,000 characters. */
function show(value: unknown): string {
  let text: string;
  try {
    text =
      typeof value === "string"
        ? value
        : isJson(value)
          ? (JSON.stringify(value) ?? String(value))
          : render(value, new Set());
  } catch {
    text = "(arguments that cannot be read)"; // a Proxy or a getter that throws
  }
  return text.length > 2000 ? `${text.slice(0, 2000)}… (${text.length} characters)` : text;
}

function isJson(value: unknown): boolean {
  try {
    copyJson(value);
    return true;
  } catch {
    return false;
  }
}

/** JSON-like text for data that is not JSON: `[function f]`, `10n`, `Date(…)`, `[circular]`. */
function render(value: unknown, ancestors: Set<object>): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "bigint":
      return `${value}n`;
    case "function":
      return `[function ${value.name || "anonymous"}]`;
    case "object":
      break;
    default:
      return String(value);
  }
  if (value === null) return "null";
  if (ancestors.has(value)) return "[circular]";
  if (ancestors.size >= 32) return "[…]";
  if (value instanceof Date) return `Date(${Number.isNaN(value.getTime()) ? "invalid" : value.toISOString()})`;
  ancestors.add(value);
  try {
    if (Array.isArray(value)) return `[${value.map((item) => render(item, ancestors)).join(",")}]`;
    const proto = Object.getPrototypeOf(value) as unknown;
    const prefix = proto === Object.prototype || proto === null ? "" : `${value.constructor?.name ?? "class"} `;
    const record = value as Record<string, unknown>;
    const fields = Object.keys(record).map((key) => `${JSON.stringify(key)}:${render(record[key], ancestors)}`);
    return `${prefix}{${fields.join(",")}}`;
  } finally {
    ancestors.delete(value);
  }
}

/**
 * A deep copy of JSON data (what parsed arguments are): plain objects, arrays and primitives.
 * Lighter than `structuredClone` for the small objects tool calls carry. Throws on anything
 * else (a function, a Date, a class instance, a cycle): no model sends that. The TypeError says
 * what it met: `a function is not JSON`, `a bigint is not JSON`, `a Date instance is not JSON`.
 */
function copyJson(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== "object") {
    if (typeof value === "function" || typeof value === "symbol" || typeof value === "bigint") {
      throw new TypeError(`a ${typeof value} is not JSON`);
    }
    return value;
  }
  if (depth > 512) throw new TypeError("nested too deeply (or circular)");
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copyJson(value[i], depth + 1);
    return out;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) {
    throw new TypeError(`a ${(value as object).constructor?.name ?? "class"} instance is not JSON`);
  }
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const inner = copyJson((value as Record<string, unknown>)[key], depth + 1);
    // JSON.parse makes "__proto__" an own property; plain assignment would set the prototype
    if (key === "__proto__")
      Object.defineProperty(out, key, { value: inner, enumerable: true, writable: true, configurable: true });
    else out[key] = inner;
  }
  return out;
}

/**
 * What a thrown value says, as text: `errorText` under the loop's name for it. Total: never
 * throws, whatever was thrown, so the loop's own failure path cannot fail.
 */
export const messageOf = errorText;

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
