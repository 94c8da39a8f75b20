/**
 * What identifies a run's input: the SHA-256 of its JSON with object keys in sorted order, so the
 * same input written in another key order is the same input.
 *
 * The engine runs a workflow once per run id and answers a second submission of the id with the
 * first run, whatever the second one asked. The run records its input's digest as its first act
 * (`AgentRun`'s `input` promise), and `submitRun` compares: the same id with other input is refused
 * by name instead of being answered with another run's result.
 */
import { createHash } from "node:crypto";

/** The hex SHA-256 of `value`'s canonical JSON (keys sorted at every level; `undefined` fields dropped). */
export function inputDigest(value: unknown): string {
  return createHash("sha256").update(canonical(value)).digest("hex");
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonical(item ?? null)).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const fields = Object.entries(value)
      .filter(([, field]) => field !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, field]) => `${JSON.stringify(key)}:${canonical(field)}`);
    return `{${fields.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
