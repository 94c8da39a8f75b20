/**
 * Chapter 16: the callable tools as TypeScript declarations, for the code tool's description.
 *
 * A model writes better code against types than against JSON Schema: each tool becomes one
 * method of `declare const tools: { … }`, its description as a doc comment, its parameters as a
 * TypeScript type (`toTypeScript`). The text stays within a token budget (4 characters a token,
 * as the context budget estimates): tools that do not fit are named on a last line instead.
 */
import type { AgentTool } from "../types.js";

/** The default budget of the declarations, in tokens (about 12 000 characters). */
export const DECLARATIONS_TOKEN_BUDGET = 3000;

type Schema = Record<string, unknown>;

/** A name JavaScript takes as it is after a dot. */
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** A JSON Schema as a TypeScript type (objects, arrays, primitives, enums, unions; else `unknown`). */
export function toTypeScript(schema: unknown, depth = 0): string {
  // #region lab 16.3 toTypeScript
  if (schema === null || typeof schema !== "object" || depth > 6) return "unknown";
  const s = schema as Schema;
  if ("const" in s) return JSON.stringify(s.const) ?? "unknown";
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(" | ") || "never";
  const union = (Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : undefined) as
    | unknown[]
    | undefined;
  if (union !== undefined) return union.map((part) => toTypeScript(part, depth + 1)).join(" | ") || "never";
  const type = s.type;
  if (Array.isArray(type)) return type.map((t) => toTypeScript({ ...s, type: t }, depth + 1)).join(" | ");
  switch (type) {
    case "string":
      return "string";
    case "number":
    case "integer":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array": {
      const item = toTypeScript(s.items, depth + 1);
      return item.includes(" ") ? `Array<${item}>` : `${item}[]`;
    }
    case "object": {
      const properties = (s.properties ?? {}) as Record<string, unknown>;
      const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
      const fields = Object.entries(properties).map(([key, value]) => {
        const name = IDENTIFIER.test(key) ? key : JSON.stringify(key);
        return `${name}${required.has(key) ? "" : "?"}: ${toTypeScript(value, depth + 1)}`;
      });
      if (fields.length === 0) return s.additionalProperties === false ? "{}" : "Record<string, unknown>";
      return `{ ${fields.join("; ")} }`;
    }
    default:
      return "unknown";
  }
  // #endregion
}

/** The most characters of a tool's doc comment: its first sentence, cut here. */
export const DECLARATION_DOC_CHARS = 120;

/**
 * `declare const tools: { … }` for `tools`, each method `name(args: …): Promise<string>` with
 * the first sentence of its description as a comment (at most `DECLARATION_DOC_CHARS`; none for
 * a tool without a description), within
 * `tokenBudget` tokens. A name that is no identifier (MCP's `get-sum`) is declared quoted, and
 * one line says how such names are called (`tools["get-sum"](args)`). Tools left out are listed
 * by name: `// also callable, same way: a, b`.
 */
export function toolDeclarations(
  tools: readonly AgentTool<any, any>[],
  tokenBudget = DECLARATIONS_TOKEN_BUDGET,
): string {
  const budget = tokenBudget * 4;
  const quoted = tools.find((tool) => !IDENTIFIER.test(tool.name));
  const head =
    "declare const tools: {\n" +
    (quoted === undefined
      ? ""
      : `  // a quoted name is called with brackets: tools[${JSON.stringify(quoted.name)}](args)\n`);
  const tail = "};";
  const lines: string[] = [];
  let used = head.length + tail.length;
  const left: string[] = [];
  for (const tool of tools) {
    const doc = firstSentence(tool.description ?? "").replaceAll("*/", "* /");
    const key = IDENTIFIER.test(tool.name) ? tool.name : JSON.stringify(tool.name);
    const comment = doc === "" ? "" : `  /** ${doc} */\n`;
    const entry = `${comment}  ${key}(args: ${toTypeScript(tool.parameters)}): Promise<string>;\n`;
    if (left.length === 0 && used + entry.length <= budget) {
      lines.push(entry);
      used += entry.length;
    } else left.push(IDENTIFIER.test(tool.name) ? tool.name : `tools[${JSON.stringify(tool.name)}]`);
  }
  const more = left.length > 0 ? `  // also callable, same way: ${left.join(", ")}\n` : "";
  return head + lines.join("") + more + tail;
}

/** The first sentence of `text`'s first line, at most `DECLARATION_DOC_CHARS` characters. */
function firstSentence(text: string): string {
  const line = text.split("\n", 1)[0]!.trim();
  const end = /[.!?](\s|$)/.exec(line);
  const sentence = end === null ? line : line.slice(0, end.index + 1);
  return sentence.length > DECLARATION_DOC_CHARS ? `${sentence.slice(0, DECLARATION_DOC_CHARS - 1)}…` : sentence;
}
