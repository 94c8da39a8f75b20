/**
 * Chapter 01, part two: a runtime boundary. Whatever enters the program from outside (JSON from a
 * file, a server's body, a tool's arguments) is `unknown` until checked, field by field; the check
 * returns a NEW object built from the checked fields, which the rest of the code may trust.
 *
 * A type assertion is not validation: `JSON.parse(text) as Settings` typechecks, and the
 * compiler then trusts whatever the file held (a number where a string should be, a missing
 * array), so the failure surfaces far away, in code that did nothing wrong. A type predicate
 * (`value is Settings`) or an assertion function (`asserts value is Settings`) is also a promise
 * the compiler takes on faith: its body must really check.
 */

/** The trusted shape: what `parseSettings` returns. */
export interface Settings {
  model: string;
  maxTokens?: number;
  tools: string[];
}

/** The keys a settings object may have, in the order the messages list them. */
export const SETTINGS_KEYS = ["model", "maxTokens", "tools"] as const;

/** How a value is named in a message: `null`, `an array`, or its `typeof` (`a number`, …). */
export function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  const type = typeof value;
  return type === "object" || type === "undefined" ? type : `a ${type}`;
}

/**
 * Checks an `unknown` value and returns a new, trusted `Settings` (the `tools` array copied, so
 * changing the input later changes nothing). Refuses, with a TypeError, in this order:
 * - not a plain object: `settings must be an object, got ${kindOf(value)}` (`got an array`, `got null`);
 * - a key that is not one of SETTINGS_KEYS: `settings has an unknown key "${key}"; the keys are model, maxTokens, tools`;
 * - `settings.model must be a non-empty string, got ${JSON.stringify(model)}`;
 * - `settings.maxTokens must be a positive integer, got ${JSON.stringify(maxTokens)}` (when present);
 * - `settings.tools must be an array of strings, got ${kindOf(tools)}`, or for one bad item
 *   `settings.tools[${i}] must be a string, got ${kindOf(item)}`.
 * `maxTokens` is left out of the result when the input has none.
 */
export function parseSettings(value: unknown): Settings {
  // #region lab 1.2 parseSettings
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError(`settings must be an object, got ${kindOf(value)}`);
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!(SETTINGS_KEYS as readonly string[]).includes(key)) {
      throw new TypeError(`settings has an unknown key "${key}"; the keys are ${SETTINGS_KEYS.join(", ")}`);
    }
  }
  const { model, maxTokens, tools } = record;
  if (typeof model !== "string" || model === "") {
    throw new TypeError(`settings.model must be a non-empty string, got ${JSON.stringify(model)}`);
  }
  if (maxTokens !== undefined && !(typeof maxTokens === "number" && Number.isInteger(maxTokens) && maxTokens > 0)) {
    throw new TypeError(`settings.maxTokens must be a positive integer, got ${JSON.stringify(maxTokens)}`);
  }
  if (!Array.isArray(tools)) throw new TypeError(`settings.tools must be an array of strings, got ${kindOf(tools)}`);
  tools.forEach((item: unknown, i) => {
    if (typeof item !== "string") throw new TypeError(`settings.tools[${i}] must be a string, got ${kindOf(item)}`);
  });
  return { model, ...(maxTokens !== undefined && { maxTokens }), tools: [...(tools as string[])] };
  // #endregion
}

/**
 * Reads settings from JSON text: `JSON.parse` (its result is `any`: never trust it as is), then
 * `parseSettings`. Text that is not JSON is refused with a SyntaxError:
 * `the settings are not JSON: ${error.message}` (the message of JSON.parse's own error).
 */
export function loadSettings(text: string): Settings {
  // #region lab 1.3 loadSettings
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new SyntaxError(`the settings are not JSON: ${(error as Error).message}`);
  }
  return parseSettings(parsed);
  // #endregion
}

/**
 * An assertion function: returns nothing when `value` is valid settings, throws
 * `parseSettings`'s error otherwise; after a call, the compiler treats `value` as `Settings`.
 */
export function assertSettings(value: unknown): asserts value is Settings {
  // #region lab 1.3 assertSettings
  parseSettings(value);
  // #endregion
}
