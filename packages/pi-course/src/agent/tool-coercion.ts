/**
 * Coercion of tool arguments: the small slips models commonly make, repaired before validation.
 *
 * The table (a value is only touched where the schema asks for another JSON type):
 *
 * | schema wants          | received                                   | becomes                  |
 * |-----------------------|--------------------------------------------|--------------------------|
 * | `number`              | a string holding a JSON number: `"42"`, `"-1.5"`, `"1e3"` | `42`, `-1.5`, `1000` |
 * | `integer`             | a string holding an integral JSON number: `"42"` | `42` (`"4.5"` stays)  |
 * | `boolean`             | `"true"` / `"false"` (any case, trimmed)   | `true` / `false`         |
 * | `string`              | a finite number or a boolean: `42`, `true` | `"42"`, `"true"`         |
 * | `object` / `array`    | a string holding JSON of that kind (double-encoded) | the parsed value |
 * | a `const` / `enum`    | the string spelling of a number or boolean member: `"3"` | `3`       |
 * | an optional property  | `null`, when its schema does not accept `null` | the property is removed |
 *
 * Nothing else is guessed: no `0`/`1` to boolean, no scalar wrapped into an array, no
 * truncation of `4.5` to an integer, no default filled in. Unions (`anyOf`/`oneOf`) keep a value
 * that already fits a branch, else take the first branch whose coercion makes it fit.
 *
 * The walker works on a value the caller owns (a fresh copy) and may change it in place; it
 * returns the (possibly replaced) value.
 */

/** A JSON Schema node, as TypeBox builds them (plain objects). */
type Schema = Record<string, unknown>;

/** Tells whether a value satisfies a schema; used to pick a union branch. */
export type SchemaCheck = (schema: Schema, value: unknown) => boolean;

const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** Coerces `value` towards `schema` following the table above. */
export function coerceValue(schema: unknown, value: unknown, check: SchemaCheck): unknown {
  // #region lab 6.1 coerceValue
  if (!isSchema(schema)) return value;
  const union = (schema.anyOf ?? schema.oneOf) as unknown;
  if (Array.isArray(union)) return coerceUnion(union, value, check);
  if (Array.isArray(schema.allOf)) {
    let result = value;
    for (const part of schema.allOf) result = coerceValue(part, result, check);
    return result;
  }
  if ("const" in schema) return coerceToMember([schema.const], value);
  if (Array.isArray(schema.enum)) return coerceToMember(schema.enum, value);

  const types = typesOf(schema);
  if (types === undefined) return value;
  let result = value;
  if (!types.some((type) => fits(type, result))) {
    for (const type of types) {
      const converted = coerceScalar(type, result);
      if (converted !== NO_CHANGE) {
        result = converted;
        break;
      }
    }
  }
  if (isPlainObject(result) && types.includes("object")) coerceObject(schema, result, check);
  else if (Array.isArray(result) && types.includes("array")) coerceArray(schema, result, check);
  return result;
  // #endregion
}

const NO_CHANGE = Symbol("no change");

/** One scalar conversion from the table, or `NO_CHANGE`. */
function coerceScalar(type: string, value: unknown): unknown {
  switch (type) {
    case "number":
    case "integer": {
      if (typeof value !== "string") return NO_CHANGE;
      const text = value.trim();
      if (!JSON_NUMBER.test(text)) return NO_CHANGE;
      const number = Number(text);
      if (!Number.isFinite(number)) return NO_CHANGE;
      return type === "integer" && !Number.isInteger(number) ? NO_CHANGE : number;
    }
    case "boolean": {
      if (typeof value !== "string") return NO_CHANGE;
      const text = value.trim().toLowerCase();
      return text === "true" ? true : text === "false" ? false : NO_CHANGE;
    }
    case "string":
      if (typeof value === "number" && Number.isFinite(value)) return String(value);
      if (typeof value === "boolean") return String(value);
      return NO_CHANGE;
    case "object":
    case "array": {
      if (typeof value !== "string") return NO_CHANGE;
      const text = value.trim();
      if (!(text.startsWith("{") || text.startsWith("["))) return NO_CHANGE;
      try {
        const parsed: unknown = JSON.parse(text);
        return fits(type, parsed) ? parsed : NO_CHANGE;
      } catch {
        return NO_CHANGE;
      }
    }
    default:
      return NO_CHANGE;
  }
}

function coerceObject(schema: Schema, value: Record<string, unknown>, check: SchemaCheck): void {
  const properties = isSchema(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  for (const key of Object.keys(value)) {
    const property = Object.hasOwn(properties, key) ? properties[key] : undefined;
    if (property !== undefined) {
      if (value[key] === null && !required.has(key) && !check(property as Schema, null)) {
        delete value[key];
        continue;
      }
      value[key] = coerceValue(property, value[key], check);
    } else if (isSchema(schema.additionalProperties)) {
      value[key] = coerceValue(schema.additionalProperties, value[key], check);
    } else if (isSchema(schema.patternProperties)) {
      for (const [pattern, inner] of Object.entries(schema.patternProperties)) {
        if (new RegExp(pattern, "u").test(key)) {
          value[key] = coerceValue(inner, value[key], check);
          break;
        }
      }
    }
  }
}

function coerceArray(schema: Schema, value: unknown[], check: SchemaCheck): void {
  const prefix = Array.isArray(schema.prefixItems)
    ? schema.prefixItems
    : Array.isArray(schema.items)
      ? schema.items
      : [];
  const rest = isSchema(schema.items) ? schema.items : undefined;
  for (let i = 0; i < value.length; i++) {
    const item = i < prefix.length ? prefix[i] : rest;
    if (item !== undefined) value[i] = coerceValue(item, value[i], check);
  }
}

function coerceUnion(branches: unknown[], value: unknown, check: SchemaCheck): unknown {
  for (const branch of branches) if (isSchema(branch) && check(branch, value)) return value;
  for (const branch of branches) {
    if (!isSchema(branch)) continue;
    const candidate = coerceValue(branch, structuredClone(value), check);
    if (check(branch, candidate)) return candidate;
  }
  return value;
}

/** A string spelling one of the members (`"3"` for `3`, `"true"` for `true`) becomes it. */
function coerceToMember(members: unknown[], value: unknown): unknown {
  if (typeof value !== "string" || members.includes(value)) return value;
  for (const member of members) {
    if ((typeof member === "number" || typeof member === "boolean") && String(member) === value.trim()) {
      return member;
    }
  }
  return value;
}

function typesOf(schema: Schema): string[] | undefined {
  if (typeof schema.type === "string") return [schema.type];
  if (Array.isArray(schema.type)) return schema.type.filter((t): t is string => typeof t === "string");
  return undefined;
}

function fits(type: string, value: unknown): boolean {
  switch (type) {
    case "string":
      return typeof value === "string";
    case "number":
      return typeof value === "number";
    case "integer":
      return typeof value === "number" && Number.isInteger(value);
    case "boolean":
      return typeof value === "boolean";
    case "null":
      return value === null;
    case "array":
      return Array.isArray(value);
    case "object":
      return isPlainObject(value);
    default:
      return false;
  }
}

function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
