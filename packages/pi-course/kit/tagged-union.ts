/**
 * Chapter 01, part one: a tagged union, handled exhaustively.
 *
 * Every union of the library has a literal `type` (or `role`, `kind`) field that tells its members
 * apart: a `switch` on it narrows the value to one member per `case`. The `default` branch hands
 * the value to `unreachable`, whose parameter is `never`: while every member has its `case`, the
 * value there IS `never` and the call typechecks; add a member to the union and forget its `case`,
 * and the compiler points at that call. At run time the branch is still reachable: data from
 * outside the program (a file, a server) may carry a `type` no member has, and `unreachable` then
 * throws instead of returning `undefined` into code that trusts the type.
 */

/** What a model streams, reduced to four kinds: the course's first running example. */
export type Delta =
  | { type: "text"; text: string }
  | { type: "toolCall"; id: string; name: string }
  | { type: "done"; reason: "stop" | "length" }
  | { type: "error"; message: string };

/**
 * The `default` branch of an exhaustive `switch`: typechecks only where the value has been
 * narrowed to `never`. If it is reached at run time anyway (data typed by assertion, not
 * validated), it throws a TypeError: `unknown ${what} type ${JSON.stringify(type)}`, where `type`
 * is the value's `type` field, e.g. `unknown delta type "bogus"`.
 */
export function unreachable(value: never, what: string): never {
  // #region lab 1.1 unreachable
  const type = (value as { type?: unknown } | null)?.type;
  throw new TypeError(`unknown ${what} type ${JSON.stringify(type)}`);
  // #endregion
}

/**
 * One line for a delta, for a log:
 * - text: `text: ${JSON.stringify(text)}` (e.g. `text: "hi"`);
 * - toolCall: `tool call ${name} (${id})`;
 * - done: `done: ${reason}`;
 * - error: `error: ${message}`.
 * Exhaustive: a `switch (delta.type)` whose `default` is `return unreachable(delta, "delta")`.
 */
export function describeDelta(delta: Delta): string {
  // #region lab 1.1 describeDelta
  switch (delta.type) {
    case "text":
      return `text: ${JSON.stringify(delta.text)}`;
    case "toolCall":
      return `tool call ${delta.name} (${delta.id})`;
    case "done":
      return `done: ${delta.reason}`;
    case "error":
      return `error: ${delta.message}`;
    default:
      return unreachable(delta, "delta");
  }
  // #endregion
}
