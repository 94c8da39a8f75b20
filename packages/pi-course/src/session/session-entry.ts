/**
 * One line of a session file, checked: the header, an entry, or a torn mark.
 *
 * The reader (session-reader.ts) hands each complete line's parsed JSON here. Everything that is
 * not exactly a known shape is refused with the line number and what to do: a file that fails
 * these checks is not guessed at (pi 1.6 skips malformed lines; this course fails closed).
 */
import { PiCourseError } from "../base/errors.js";
import type { SessionEntry, SessionHeader, SessionTornMark } from "./types.js";
import { THINKING_LEVELS } from "../model.js";

/** The format version this code writes, and the newest it reads. */
export const SESSION_FORMAT_VERSION = 1;

/**
 * The deepest nesting of objects and arrays a line may hold (the line itself is level 1). Deeper
 * lines are refused by the reader and never written by `append`: recursive code (freezing,
 * `JSON.stringify`, the projection) would overflow the stack on them.
 */
export const MAX_NESTING = 1000;

/** Whether `value` nests objects and arrays deeper than `max` levels. Iterative: never overflows the stack. */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  const stack: [object, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (depth > max) return true;
    for (const child of Object.values(node)) {
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

/** A session file that cannot be read as it stands. Nothing in the file was changed. */
export class SessionFileError extends PiCourseError {
  /** Stable: `"SESSION_FILE"`. */
  override readonly code = "SESSION_FILE";
  constructor(
    /** The file. */
    readonly path: string,
    /** The 1-based line the problem is on (0 when it is about the whole file). */
    readonly line: number,
    message: string,
  ) {
    super(line > 0 ? `${path}:${line}: ${message}` : `${path}: ${message}`);
    this.name = "SessionFileError";
  }
}

/** The entry types this reader knows, in the order error messages list them. */
export const ENTRY_TYPES: readonly SessionEntry["type"][] = [
  "message",
  "label",
  "compaction",
  "model_change",
  "model_route",
  "tool_intent",
  "tool_outcome",
];

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The header line (line 1). Refuses a newer format version with what to do. */
export function parseHeader(value: unknown, path: string): SessionHeader {
  const fail = (why: string) => new SessionFileError(path, 1, `not a session header: ${why}`);
  if (!isObject(value) || value.type !== "session") throw fail('line 1 must be {"type":"session",…}');
  const { version, id, timestamp, cwd } = value;
  if (typeof version !== "number" || !Number.isInteger(version) || version < 1)
    throw fail("version must be a whole number ≥ 1");
  if (version > SESSION_FORMAT_VERSION) {
    throw new SessionFileError(
      path,
      1,
      `the file has format version ${version}, newer than this reader's ${SESSION_FORMAT_VERSION}: ` +
        "open it with the newer @pi/course that wrote it (upgrade this one); the file was left untouched",
    );
  }
  if (typeof id !== "string" || id === "") throw fail("id must be a non-empty string");
  if (typeof timestamp !== "string") throw fail("timestamp must be a string");
  if (typeof cwd !== "string") throw fail("cwd must be a string");
  return value as unknown as SessionHeader;
}

/** A torn mark line, checked field by field. */
export function parseTornMark(value: unknown, path: string, line: number): SessionTornMark {
  if (
    !isObject(value) ||
    value.type !== "torn" ||
    !Number.isSafeInteger(value.offset) ||
    !Number.isSafeInteger(value.length) ||
    typeof value.timestamp !== "string"
  ) {
    throw new SessionFileError(path, line, 'a torn mark must be {"type":"torn","offset":n,"length":n,"timestamp":"…"}');
  }
  return value as unknown as SessionTornMark;
}

/**
 * One entry line, checked: the base fields, then the fields of its type. Does not check
 * references to other entries (the reader does: it knows the whole file).
 */
export function parseEntry(value: unknown, path: string, line: number): SessionEntry {
  const fail = (why: string) => new SessionFileError(path, line, why);
  if (!isObject(value)) throw fail("an entry must be a JSON object");
  const { type, id, parentId, timestamp } = value;
  if (typeof type !== "string") throw fail('an entry needs a string "type"');
  if (!(ENTRY_TYPES as readonly string[]).includes(type)) {
    throw fail(
      `unknown entry type "${type}" (this reader knows ${ENTRY_TYPES.join(", ")}); ` +
        "if a newer @pi/course wrote it, open the file with that version",
    );
  }
  if (typeof id !== "string" || id === "") throw fail(`the ${type} entry needs a non-empty string "id"`);
  if (parentId !== null && (typeof parentId !== "string" || parentId === "")) {
    throw fail(`entry ${id}: "parentId" must be null (a root) or an entry id`);
  }
  if (typeof timestamp !== "string") throw fail(`entry ${id}: "timestamp" must be an ISO 8601 string`);
  switch (type) {
    case "message": {
      const message = value.message;
      if (!isObject(message) || typeof message.role !== "string") {
        throw fail(`message entry ${id}: "message" must be an object with a string "role"`);
      }
      const canonical = message.role === "user" || message.role === "assistant" || message.role === "toolResult";
      if (canonical && (!Array.isArray(message.content) || typeof message.timestamp !== "number")) {
        throw fail(`message entry ${id}: a ${message.role} message needs a "content" array and a numeric "timestamp"`);
      }
      break;
    }
    case "label":
      if (typeof value.targetId !== "string") throw fail(`label entry ${id}: "targetId" must be an entry id`);
      if (value.label !== null && typeof value.label !== "string")
        throw fail(`label entry ${id}: "label" must be a string or null`);
      break;
    case "compaction":
      if (typeof value.summary !== "string") throw fail(`compaction entry ${id}: "summary" must be a string`);
      if (typeof value.firstKeptEntryId !== "string")
        throw fail(`compaction entry ${id}: "firstKeptEntryId" must be an entry id`);
      if (typeof value.tokensBefore !== "number" || typeof value.tokensAfter !== "number") {
        throw fail(`compaction entry ${id}: "tokensBefore" and "tokensAfter" must be numbers`);
      }
      break;
    case "model_change":
      if (typeof value.model !== "string" || value.model === "")
        throw fail(`model_change entry ${id}: "model" must be a model name`);
      if (!(THINKING_LEVELS as readonly unknown[]).includes(value.thinking))
        throw fail(`model_change entry ${id}: "thinking" must be one of ${THINKING_LEVELS.join(", ")}`);
      break;
    case "model_route":
      if (typeof value.model !== "string" || typeof value.provider !== "string" || typeof value.answeredBy !== "string")
        throw fail(`model_route entry ${id}: "model", "provider" and "answeredBy" must be strings`);
      if (
        !Array.isArray(value.skipped) ||
        !value.skipped.every((s) => isObject(s) && typeof s.model === "string" && typeof s.error === "string")
      )
        throw fail(`model_route entry ${id}: "skipped" must be a list of { "model", "error" }`);
      break;
    case "tool_intent":
    case "tool_outcome":
      if (typeof value.toolCallId !== "string" || typeof value.toolName !== "string") {
        throw fail(`${type} entry ${id}: "toolCallId" and "toolName" must be strings`);
      }
      if (type === "tool_outcome" && (!Array.isArray(value.content) || typeof value.isError !== "boolean")) {
        throw fail(`tool_outcome entry ${id}: "content" must be an array and "isError" a boolean`);
      }
      break;
  }
  return value as unknown as SessionEntry;
}
