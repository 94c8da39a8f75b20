/**
 * TypeBox's `Type.Record` as the bundle has it at once (scripts/bundle.ts). TypeBox builds every
 * record through its type engine (the code that also instantiates generics, maps and computes
 * types), some 125 KB that a fresh process reads and compiles; the sources call `Type.Record`
 * while they load (the shapes of `models.json`, `mcp.json`, the trust file), so the root import
 * paid for all of it.
 *
 * A record keyed by a plain `Type.String()` (every one the sources build) is built here from
 * TypeBox's own small parts, exactly as its engine builds it for that key: `RecordFromPattern`
 * with `StringKey`, then `Memory.Update` with the options. Any other key (a number, a union of
 * literals, a template literal, a string with a `pattern`, a reference) goes to TypeBox's own
 * `Type.Record`, which loads the whole `Type` (`cli/typebox-type.cjs`) on first use. The package
 * test holds both paths to TypeBox's results.
 */
import { IsString, RecordFromPattern, StringKey, type TSchema } from "typebox";
import { Memory } from "typebox/system";
import { objectOnFirstUse } from "./on-first-use.js";

const whole = objectOnFirstUse("./typebox-type.cjs", "Type") as {
  Record: (key: TSchema, value: TSchema, options?: object) => TSchema;
};

/** `Type.Record(key, value, options)`: TypeBox's result, its engine loaded only for a key that needs it. */
export function Record(key: TSchema, value: TSchema, options: object = {}): TSchema {
  if (IsString(key) && !("pattern" in key)) return Memory.Update(RecordFromPattern(StringKey, value), {}, options);
  return whole.Record(key, value, options);
}
