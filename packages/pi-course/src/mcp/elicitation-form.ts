/**
 * A form a server asks a person to fill in (`elicitation/create` in form mode), read from its
 * `requestedSchema` as the MCP specification (2025-11-25) restricts it: a flat object whose
 * properties are text (`format` email, uri, date or date-time; `minLength`, `maxLength`), numbers
 * and integers (`minimum`, `maximum`), yes/no, one choice (`enum`, with `enumNames` for labels, or
 * `oneOf` of `{ const, title }`) or several (`type: "array"` whose `items` hold `enum` or `anyOf`;
 * `minItems`, `maxItems`). A front end asks field by field (`fieldHint` says what a field takes)
 * and reads each typed answer with `readFieldAnswer`, which checks it against the schema.
 */

/** What a field takes. */
export type FormFieldKind = "text" | "number" | "integer" | "boolean" | "choice" | "choices";

/** One option of a choice: the value sent, the label shown. */
export interface FormOption {
  value: string;
  label: string;
}

/** One field of a form, in the order of the schema's properties. */
export interface FormField {
  /** The property's name: the key of the answer's `content`. */
  name: string;
  /** What a person reads: the property's `title`, else its name. */
  label: string;
  description?: string;
  required: boolean;
  kind: FormFieldKind;
  /** The choices of a `choice` or `choices` field. */
  options?: FormOption[];
  /** The schema's `default` (an empty answer takes it). */
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  /** A text's format: email, uri, date or date-time. */
  format?: string;
  minItems?: number;
  maxItems?: number;
}

/** A request's form, or why it cannot be shown as one. */
export type ElicitationForm = { message: string; fields: FormField[] } | { problem: string };

/** A typed answer to one field: its value, left out (an optional field left empty), or what is wrong. */
export type FieldAnswer = { value: unknown } | { omitted: true } | { problem: string };

const FORMATS = new Set(["email", "uri", "date", "date-time"]);

/**
 * The most fields a form may have (50): a person answers each one at the terminal, so a form
 * with more (a server asking 20,000 questions) is declined whole, with a notice, before any is asked.
 */
export const MAX_FORM_FIELDS = 50;

/** The form of an `elicitation/create` request's `params` (form mode). */
export function elicitationForm(params: Record<string, unknown>): ElicitationForm {
  const message = typeof params.message === "string" ? params.message : "";
  const schema = params.requestedSchema;
  if (!isRecord(schema) || !isRecord(schema.properties))
    return { problem: "its requestedSchema is not an object with properties" };
  const count = Object.keys(schema.properties).length;
  if (count > MAX_FORM_FIELDS)
    return { problem: `it has ${count} fields, more than the ${MAX_FORM_FIELDS} a person is asked one by one` };
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((n) => typeof n === "string") : []);
  const fields: FormField[] = [];
  for (const [name, property] of Object.entries(schema.properties)) {
    const field = readField(name, property, required.has(name));
    if (typeof field === "string") return { problem: `its field ${JSON.stringify(name)} ${field}` };
    fields.push(field);
  }
  return { message, fields };
}

/** One property as a field, or what is wrong with it. */
function readField(name: string, property: unknown, required: boolean): FormField | string {
  if (!isRecord(property)) return "is not an object";
  const field: FormField = { name, label: text(property.title) ?? name, required, kind: "text" };
  const description = text(property.description);
  if (description !== undefined) field.description = description;
  if ("default" in property) field.default = property.default;
  const type = property.type;
  if (type === "array") {
    const options = isRecord(property.items) ? choiceOptions(property.items) : undefined;
    if (options === undefined) return "is a list whose items are not choices (enum or anyOf)";
    field.kind = "choices";
    field.options = options;
    copyNumber(property, field, "minItems");
    copyNumber(property, field, "maxItems");
    return field;
  }
  if (type === "string") {
    const options = choiceOptions(property);
    if (options !== undefined) {
      field.kind = "choice";
      field.options = options;
      return field;
    }
    copyNumber(property, field, "minLength");
    copyNumber(property, field, "maxLength");
    const format = text(property.format);
    if (format !== undefined && FORMATS.has(format)) field.format = format;
    return field;
  }
  if (type === "number" || type === "integer" || type === "boolean") {
    field.kind = type;
    copyNumber(property, field, "minimum");
    copyNumber(property, field, "maximum");
    return field;
  }
  return `has type ${JSON.stringify(type)}, which a form may not ask for (text, number, integer, boolean or a choice)`;
}

/** The options of `enum` (labelled by `enumNames`), `oneOf` or `anyOf` of `{ const, title }`. */
function choiceOptions(schema: Record<string, unknown>): FormOption[] | undefined {
  if (Array.isArray(schema.enum)) {
    const names = Array.isArray(schema.enumNames) ? schema.enumNames : [];
    return schema.enum.map((value, i) => ({ value: String(value), label: text(names[i]) ?? String(value) }));
  }
  const list = Array.isArray(schema.oneOf) ? schema.oneOf : Array.isArray(schema.anyOf) ? schema.anyOf : undefined;
  if (list === undefined || !list.every((option) => isRecord(option) && typeof option.const === "string"))
    return undefined;
  return (list as Record<string, unknown>[]).map((option) => ({
    value: option.const as string,
    label: text(option.title) ?? (option.const as string),
  }));
}

/** What a field takes, in a few words: `text, an email address`, `1-100`, `y/n`, `one of 1-5`. */
export function fieldHint(field: FormField): string {
  const parts: string[] = [];
  switch (field.kind) {
    case "boolean":
      parts.push("y/n");
      break;
    case "choice":
      parts.push(`a number 1-${field.options!.length}`);
      break;
    case "choices": {
      const count =
        field.minItems === field.maxItems && field.minItems !== undefined
          ? `${field.minItems}`
          : `${field.minItems ?? 0}-${field.maxItems ?? field.options!.length}`;
      parts.push(`${count} numbers, separated by commas`);
      break;
    }
    case "number":
    case "integer":
      parts.push(field.kind === "integer" ? "a whole number" : "a number");
      if (field.minimum !== undefined || field.maximum !== undefined)
        parts.push(`${field.minimum ?? "…"} to ${field.maximum ?? "…"}`);
      break;
    case "text":
      parts.push(field.format === undefined ? "text" : FORMAT_NAMES[field.format]!);
      if (field.minLength !== undefined || field.maxLength !== undefined)
        parts.push(`${field.minLength ?? 0}-${field.maxLength ?? "…"} characters`);
  }
  if (field.default !== undefined) parts.push(`Enter: ${shown(field, field.default)}`);
  else if (!field.required) parts.push("Enter: leave out");
  return parts.join(", ");
}

const FORMAT_NAMES: Record<string, string> = {
  email: "an email address",
  uri: "a URL",
  date: "a date (YYYY-MM-DD)",
  "date-time": "a date and time (YYYY-MM-DDTHH:MM:SSZ)",
};

/** A value as a person reads it (a choice by its label). */
export function shown(field: FormField, value: unknown): string {
  const label = (v: unknown) => field.options?.find((option) => option.value === v)?.label ?? String(v);
  if (Array.isArray(value)) return value.map(label).join(", ");
  if (typeof value === "boolean") return value ? "yes" : "no";
  return field.options === undefined ? String(value) : label(value);
}

/**
 * Reads what was typed for `field`. Empty: the field's default, else left out when optional,
 * else a problem. A choice is its number in the list, its value or its label; several are
 * separated by commas. Every answer is checked against the field's schema.
 */
export function readFieldAnswer(field: FormField, typed: string): FieldAnswer {
  const input = typed.trim();
  if (input === "") {
    if (field.default !== undefined) return { value: field.default };
    return field.required ? { problem: `${field.label} is required` } : { omitted: true };
  }
  switch (field.kind) {
    case "boolean": {
      const answer = input.toLowerCase();
      if (["y", "yes", "true"].includes(answer)) return { value: true };
      if (["n", "no", "false"].includes(answer)) return { value: false };
      return { problem: "answer y or n" };
    }
    case "number":
    case "integer": {
      const value = Number(input);
      if (!Number.isFinite(value)) return { problem: `${JSON.stringify(input)} is not a number` };
      if (field.kind === "integer" && !Number.isInteger(value)) return { problem: "give a whole number" };
      if (field.minimum !== undefined && value < field.minimum) return { problem: `give at least ${field.minimum}` };
      if (field.maximum !== undefined && value > field.maximum) return { problem: `give at most ${field.maximum}` };
      return { value };
    }
    case "choice": {
      const option = pick(field.options!, input);
      return option === undefined ? { problem: `choose one of 1-${field.options!.length}` } : { value: option.value };
    }
    case "choices": {
      const picked: string[] = [];
      for (const part of input.split(",")) {
        const option = pick(field.options!, part.trim());
        if (option === undefined)
          return { problem: `${JSON.stringify(part.trim())} is not one of 1-${field.options!.length}` };
        if (!picked.includes(option.value)) picked.push(option.value);
      }
      if (field.minItems !== undefined && picked.length < field.minItems)
        return { problem: `choose at least ${field.minItems}` };
      if (field.maxItems !== undefined && picked.length > field.maxItems)
        return { problem: `choose at most ${field.maxItems}` };
      return { value: picked };
    }
    case "text": {
      const length = [...input].length;
      if (field.minLength !== undefined && length < field.minLength)
        return { problem: `give at least ${field.minLength} characters` };
      if (field.maxLength !== undefined && length > field.maxLength)
        return { problem: `give at most ${field.maxLength} characters` };
      if (field.format !== undefined && !FORMAT_CHECKS[field.format]!(input))
        return { problem: `${JSON.stringify(input)} is not ${FORMAT_NAMES[field.format]}` };
      return { value: input };
    }
  }
}

/** The option a typed part names: its number (from 1), its value, or its label (any case). */
function pick(options: FormOption[], typed: string): FormOption | undefined {
  if (/^\d+$/.test(typed)) return options[Number(typed) - 1];
  const lower = typed.toLowerCase();
  return options.find((option) => option.value === typed || option.label.toLowerCase() === lower);
}

const FORMAT_CHECKS: Record<string, (text: string) => boolean> = {
  email: (text) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text),
  uri: (text) => URL.canParse(text) && /^[a-z][a-z0-9+.-]*:/i.test(text),
  date: (text) => /^\d{4}-\d{2}-\d{2}$/.test(text) && validDate(text),
  "date-time": (text) =>
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text) && validDate(text),
};

/** A date whose day exists (2026-02-30 does not). */
function validDate(text: string): boolean {
  const day = text.slice(0, 10);
  const parsed = new Date(`${day}T00:00:00Z`);
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 10) === day;
}

function copyNumber<K extends "minimum" | "maximum" | "minLength" | "maxLength" | "minItems" | "maxItems">(
  from: Record<string, unknown>,
  to: FormField,
  key: K,
): void {
  const value = from[key];
  if (typeof value === "number" && Number.isFinite(value)) to[key] = value;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
