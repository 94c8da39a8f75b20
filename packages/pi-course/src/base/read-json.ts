/**
 * One way in from files: every JSON format the library reads (config, MCP config, models file,
 * trust file, eval cases) is a TypeBox schema read through `readJsonFile` / `parseJson`, so each
 * failure is worded once, whichever file it is about:
 *
 * ```text
 * <where> does not exist
 * <where> cannot be read (<the system's code, e.g. EACCES>)
 * <where> is not a regular file (it is a folder)           or a FIFO, a device, a socket
 * <where> is larger than <maxBytes> bytes, more than a file read here may hold
 * <where> is not JSON (<the parser's message>)
 * <where> must be <expected>, got <what it holds>                  the value itself
 * <where>: <path> must be <expected>, got <what it holds>          a field, e.g. models[0].contextWindow
 * <where> has an unknown key "<key>"; the keys are <a, b, c>
 * <where>: <path> has an unknown key "<key>"; the keys are <a, b, c>
 * ```
 *
 * `<expected>` is the `expected` annotation of the failing schema (or of the closest list or
 * record holding it), e.g. `Type.Integer({ minimum: 1, expected: "a whole number of tokens" })`;
 * without one it is said from the schema's type. `<what it holds>` never shows a string's text
 * (a key pasted where a name belongs must not reach a terminal): `a string of 5 characters`,
 * `an array of 2 items`, `an object`, `null`, `nothing` for a missing field, and numbers and
 * booleans as JSON (`0`, `true`; only their type where the place says `hideValues`).
 *
 * A missing field is reported at the field when its schema has an `expected`, else at the object
 * around it when that one has (`<where> must be a JSON object with an "mcpServers" object: …`),
 * else at the field, said from its type.
 *
 * A format adds what a schema cannot say (a URL's scheme, a key that looks like a secret) as
 * checks on the value the reader returns.
 */
import { type Stats, closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import type { Static, TSchema } from "typebox";
import type { Validator } from "typebox/compile";
import { PiCourseError, errorText } from "./errors.js";
import { validatorFor } from "./schema-validator.js";

/** Which way a text failed: the file is not there, cannot be read, is not JSON, or has the wrong shape. */
export type JsonFailure = "missing" | "unreadable" | "not-json" | "shape";

/** How a format names its text in messages and what it throws. */
export interface JsonPlace {
  /** The text's name, first in every message: `the config file /home/a/.pi-course/config.json`. */
  where: string;
  /**
   * Makes the format's own error from a message (which has no final period). Default: a
   * `JsonFileError`. A format may add its advice here (`; fix it or remove it.`).
   */
  error?: (message: string, failure: JsonFailure) => Error;
  /** The file may hold secrets: "got" gives a number's or a boolean's type, not its value. */
  hideValues?: boolean;
}

/** A JSON text or file that cannot be used, when its format names no error class of its own. */
export class JsonFileError extends PiCourseError {
  override name = "JsonFileError";
  /** Stable: `"JSON_FILE"`. */
  override readonly code = "JSON_FILE";
  constructor(
    message: string,
    /** Which way it failed. */
    readonly failure: JsonFailure,
  ) {
    super(message);
  }
}

/**
 * `text` parsed as JSON and checked against `schema`. Throws the place's error (see the file's
 * header for the wording) when it is not JSON or not of the schema's shape.
 */
export function parseJson<T extends TSchema>(text: string, schema: T, place: string | JsonPlace): Static<T> {
  const at = placeOf(place);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw fail(at, `${at.where} is not JSON (${errorText(error)})`, "not-json");
  }
  return checkJson(value, schema, at);
}

/** `value` (already parsed) checked against `schema`; throws as `parseJson` does for a wrong shape. */
export function checkJson<T extends TSchema>(value: unknown, schema: T, place: string | JsonPlace): Static<T> {
  const validator = validatorFor(schema);
  if (validator.Check(value)) return value as Static<T>;
  const at = placeOf(place);
  throw fail(at, shapeMessage(at, schema, value, validator), "shape");
}

/** What `readJsonFile` does besides naming the file. */
export interface ReadJsonOptions<M> extends Partial<JsonPlace> {
  /**
   * What an absent file (ENOENT) stands for: its result is returned. Not given: an absent file
   * is the error `<where> does not exist`.
   */
  ifMissing?: () => M;
  /** The most bytes the file may hold (default `MAX_FILE_BYTES`); a larger one is refused unread. */
  maxBytes?: number;
  /**
   * A pipe is read too, to its end (e.g. `--api-key-file <(pass show openai)`), where reading one
   * is the point. A named pipe that nobody writes to reads as empty, at once.
   */
  allowPipe?: boolean;
}

/** The most a file the library reads because a user named it may hold, unless its format says less: 16 MiB. */
export const MAX_FILE_BYTES = 16 * 1024 * 1024;

/**
 * The file at `file` read (UTF-8), parsed and checked against `schema`; `where` defaults to the
 * path. Throws the place's error for a missing file (unless `ifMissing`), an unreadable one, text
 * that is not JSON, or a wrong shape, worded as the file's header says.
 */
export function readJsonFile<T extends TSchema, M = never>(
  file: string,
  schema: T,
  options: ReadJsonOptions<M> = {},
): Static<T> | M {
  const at: JsonPlace = { ...options, where: options.where ?? file };
  const { ifMissing } = options;
  const text = readTextFile(file, { ...at, ...(ifMissing !== undefined && { ifMissing: () => undefined }) });
  return text === undefined ? ifMissing!() : parseJson(text, schema, at);
}

/**
 * The text of `file` (UTF-8), for a format that parses it itself: the first half of
 * `readJsonFile`, with the same wording for a missing or unreadable file. Only a regular file is
 * read (a folder, a FIFO or a device such as `/dev/zero` is refused at once, without blocking or
 * reading it), and only up to `maxBytes` (see the file's header for the wording).
 */
export function readTextFile<M = never>(file: string, options: ReadJsonOptions<M> = {}): string | M {
  const at: JsonPlace = { ...options, where: options.where ?? file };
  let read: { text: string } | { refused: string };
  try {
    // O_NONBLOCK: opening a FIFO that has no writer would otherwise wait for one forever.
    const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      read = readOpenFile(fd, options.maxBytes ?? MAX_FILE_BYTES, options.allowPipe === true);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (code === "ENOENT") {
      if (options.ifMissing !== undefined) return options.ifMissing();
      throw fail(at, `${at.where} does not exist`, "missing");
    }
    throw fail(at, `${at.where} cannot be read (${typeof code === "string" ? code : errorText(error)})`, "unreadable");
  }
  if ("refused" in read) throw fail(at, `${at.where} ${read.refused}`, "unreadable");
  return read.text;
}

/** The open file `fd` read to its end: its text, or why it is refused. Throws what the system throws. */
function readOpenFile(fd: number, max: number, allowPipe: boolean): { text: string } | { refused: string } {
  const info = fstatSync(fd);
  const pipe = allowPipe && info.isFIFO();
  if (!info.isFile() && !pipe) return { refused: `is not a regular file (it is ${fileKind(info)})` };
  const tooBig = { refused: `is larger than ${max} bytes, more than a file read here may hold` };
  if (info.size > max) return tooBig;
  // One byte past the cap at most: the file may have grown since fstat.
  let buffer = Buffer.alloc(info.size + 1);
  let length = 0;
  for (;;) {
    if (length === buffer.length) {
      if (length > max) return tooBig;
      const bigger = Buffer.alloc(Math.min(max + 1, buffer.length * 2));
      buffer.copy(bigger, 0, 0, length);
      buffer = bigger;
    }
    let count: number;
    try {
      count = readSync(fd, buffer, length, buffer.length - length, null);
    } catch (error) {
      // A pipe opened without blocking whose writer has not written yet: wait a little, read again.
      if (!pipe || (error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
      Atomics.wait(PAUSE, 0, 0, 10);
      continue;
    }
    if (count === 0) return { text: buffer.toString("utf8", 0, length) };
    length += count;
  }
}

const PAUSE = new Int32Array(new SharedArrayBuffer(4));

function fileKind(info: Stats): string {
  if (info.isDirectory()) return "a folder";
  if (info.isFIFO()) return "a FIFO";
  if (info.isSocket()) return "a socket";
  if (info.isCharacterDevice() || info.isBlockDevice()) return "a device";
  return "not a file";
}

/**
 * A JSON value as a message shows it after "got": never a string's text; numbers and booleans
 * as JSON unless `hide` (a file that may hold secrets says only their type).
 */
export function describeJson(value: unknown, hide = false): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (typeof value === "string") return `a string of ${value.length} character${value.length === 1 ? "" : "s"}`;
  if (Array.isArray(value)) return `an array of ${value.length} item${value.length === 1 ? "" : "s"}`;
  if (typeof value === "object") return "an object";
  if (!hide && (typeof value === "number" || typeof value === "boolean")) return String(value);
  return `a ${typeof value}`;
}

// ---------------------------------------------------------------------------------------------

function placeOf(place: string | JsonPlace): JsonPlace {
  return typeof place === "string" ? { where: place } : place;
}

function fail(place: JsonPlace, message: string, failure: JsonFailure): Error {
  return place.error !== undefined ? place.error(message, failure) : new JsonFileError(message, failure);
}

type SchemaNode = Record<string, unknown>;

/**
 * The first failure TypeBox finds, in the one wording. An unknown key is reported as such; any
 * other failure at the closest schema that says what it expects, walking out of lists, records
 * and unions (never out of an object's property: a field is reported at its own path).
 */
function shapeMessage(place: JsonPlace, schema: TSchema, value: unknown, validator: Validator): string {
  const { where, hideValues: hide = false } = place;
  const errors = validator.Errors(value);
  const first = errors.find((e) => e.keyword !== "boolean") ?? errors[0];
  if (first === undefined)
    return `${where} must be ${expectedOf(schema as SchemaNode)}, got ${describeJson(value, hide)}`;
  const steps = schemaSteps(first.schemaPath);
  let path = pointerSegments(first.instancePath);
  let node = nodeAt(schema as SchemaNode, steps);
  if (first.keyword === "additionalProperties") {
    const extra = (first.params as { additionalProperties?: string[] }).additionalProperties ?? [];
    const keys = Object.keys((node.properties as SchemaNode | undefined) ?? {});
    const owner = path.length === 0 ? where : `${where}: ${pathText(value, path)}`;
    return `${owner} has an unknown key ${JSON.stringify(extra[0])}; the keys are ${keys.join(", ")}`;
  }
  if (first.keyword === "required") {
    // At the missing field, unless only the object around it says what it expects.
    const missing = (first.params as { requiredProperties?: string[] }).requiredProperties?.[0] ?? "";
    const field = (node.properties as Record<string, SchemaNode> | undefined)?.[missing] ?? {};
    if (field.expected === undefined && node.expected !== undefined) {
      const subject = path.length === 0 ? where : `${where}: ${pathText(value, path)}`;
      return `${subject} must be ${expectedOf(node)}, got ${describeJson(valueAt(value, path), hide)}`;
    }
    return `${where}: ${pathText(value, [...path, missing])} must be ${expectedOf(field)}, got nothing`;
  }
  // Walk out to the closest annotated schema through containers of the same field.
  let depth = steps.length;
  while (node.expected === undefined && depth > 0) {
    const step = steps[depth - 1]!;
    if (step.kind === "property") break;
    depth--;
    path = path.slice(0, path.length - step.consumes);
    node = nodeAt(schema as SchemaNode, steps.slice(0, depth));
  }
  if (node.expected === undefined) node = nodeAt(schema as SchemaNode, steps);
  if (node.expected === undefined) path = pointerSegments(first.instancePath);
  const got = describeJson(valueAt(value, path), hide);
  const subject = path.length === 0 ? where : `${where}: ${pathText(value, path)}`;
  return `${subject} must be ${expectedOf(node)}, got ${got}`;
}

interface Step {
  /** The keywords walked into, e.g. `["properties", "models"]` or `["items"]`. */
  keys: string[];
  kind: "property" | "container" | "branch";
  /** How many segments of the value's path this step walks. */
  consumes: number;
}

/** `#/properties/models/items/properties/id` as steps into the schema. */
function schemaSteps(schemaPath: string): Step[] {
  const parts = pointerSegments(schemaPath.replace(/^#/, ""));
  const steps: Step[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part === "properties" || part === "patternProperties") {
      steps.push({ keys: [part, parts[i + 1]!], kind: part === "properties" ? "property" : "container", consumes: 1 });
      i++;
    } else if (part === "anyOf" || part === "oneOf" || part === "allOf") {
      steps.push({ keys: [part, parts[i + 1]!], kind: "branch", consumes: 0 });
      i++;
    } else if (part === "items" || part === "additionalProperties") {
      steps.push({ keys: [part], kind: "container", consumes: 1 });
    } else {
      steps.push({ keys: [part], kind: "branch", consumes: 0 });
    }
  }
  return steps;
}

function nodeAt(schema: SchemaNode, steps: readonly Step[]): SchemaNode {
  let node: unknown = schema;
  for (const step of steps) {
    for (const key of step.keys) node = (node as Record<string, unknown> | undefined)?.[key];
  }
  return typeof node === "object" && node !== null ? (node as SchemaNode) : {};
}

function pointerSegments(pointer: string): string[] {
  if (pointer === "" || pointer === "/") return [];
  return pointer
    .slice(1)
    .split("/")
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function valueAt(value: unknown, path: readonly string[]): unknown {
  let at = value;
  for (const key of path) at = (at as Record<string, unknown> | undefined)?.[key];
  return at;
}

/** A path as JavaScript would reach it: `models[0].prices.source`, `providers["my cloud"]`. */
function pathText(value: unknown, path: readonly string[]): string {
  let text = "";
  let at = value;
  for (const key of path) {
    if (Array.isArray(at)) text += `[${key}]`;
    else if (/^[A-Za-z_$][\w$-]*$/.test(key)) text += text === "" ? key : `.${key}`;
    else text += `[${JSON.stringify(key)}]`;
    at = (at as Record<string, unknown> | undefined)?.[key];
  }
  return text;
}

/** What a schema expects, as a phrase after "must be": its `expected`, else said from its type. */
function expectedOf(node: SchemaNode): string {
  if (typeof node.expected === "string") return node.expected;
  if (node.const !== undefined) return JSON.stringify(node.const);
  const branches = (node.anyOf ?? node.oneOf) as SchemaNode[] | undefined;
  if (Array.isArray(branches)) return branches.map(expectedOf).join(" or ");
  switch (node.type) {
    case "string":
      return typeof node.minLength === "number" && node.minLength > 0 ? "a non-empty string" : "a string";
    case "integer":
      return "a whole number";
    case "number":
      return "a number";
    case "boolean":
      return "true or false";
    case "array":
      return "a list";
    case "object":
      return "an object";
    case "null":
      return "null";
    default:
      return "a JSON value";
  }
}
