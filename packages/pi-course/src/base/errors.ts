/**
 * The library's errors: one base class, so a caller can catch every failure of `@pi/course` in
 * one place (`error instanceof PiCourseError`) and tell them apart by `code` without matching
 * message texts; and `errorText`, the one way to turn anything thrown into text.
 */

/**
 * The base of every error class of the library. `code` names the kind of failure and never
 * changes between versions (messages may be reworded); each class documents its own.
 *
 * Contract: a subclass sets `code` (a string constant) and `name` (its class name); `instanceof`
 * works for the subclass and for this base. `McpError` is the one class whose `code` is a number:
 * the JSON-RPC error code of the protocol it mirrors (its `kind` names the failure).
 */
export class PiCourseError extends Error {
  override name = "PiCourseError";
  /** Stable: `"PI_COURSE"` here; each subclass its own (e.g. `"CONFIG"`, `"MODELS_FILE"`). */
  readonly code: string | number = "PI_COURSE";
}

/**
 * What a thrown value says, as text: an Error's message (or its name when the message is empty),
 * else its string form. Contract: never throws, whatever was thrown (`Object.create(null)`, an
 * object whose `toString` throws, a Proxy that throws on every access, an Error whose `message`
 * getter throws).
 */
export function errorText(error: unknown): string {
  try {
    if (error instanceof Error) {
      const message: unknown = error.message;
      if (typeof message === "string" && message !== "") return message;
      const name: unknown = error.name;
      return typeof name === "string" && name !== "" ? name : "Error";
    }
    return String(error);
  } catch {
    return `(a thrown ${typeof error} that cannot be read as text)`;
  }
}
