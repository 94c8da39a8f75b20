/**
 * The shape of a `pi-course-restate` command, and the option parsing they share.
 *
 * A command has a name, a one-line summary for the list of commands, its own `--help` text, and
 * `run`, which resolves with the exit code (0 done; 1 the work failed, its error said on stderr; 2 a
 * usage error). A usage error is a `UsageError`: the dispatcher adds how to get the command's help.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";

export interface Command {
  name: string;
  summary: string;
  /** The whole `--help` text (starts with the usage line). */
  help: string;
  run(args: string[]): Promise<number>;
}

/** The command line was wrong: said with a pointer to the command's `--help`. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** What `parse` gives: each option's value (a string, or `true` for a switch) and the positionals. */
export interface Parsed {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/** `node:util` `parseArgs` (strict) whose complaints are `UsageError`s; at most `positionals` positionals. */
export function parse<T extends NonNullable<ParseArgsConfig["options"]>>(
  args: string[],
  options: T,
  positionals = 0,
): { values: { [K in keyof T]?: T[K]["type"] extends "boolean" ? boolean : string }; positionals: string[] } {
  let parsed: Parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true }) as Parsed;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  if (parsed.positionals.length > positionals) {
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[positionals])}`);
  }
  return parsed as ReturnType<typeof parse<T>>;
}

/** `value` as a whole number of at least `min`, or a `UsageError` naming `flag`. */
export function wholeNumber(flag: string, value: string, min = 1): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min)
    throw new UsageError(`${flag} must be a whole number of at least ${min}, got ${value}`);
  return n;
}

/** The `--engine DIR` option every client command takes: the engine's folder or its `client.json`. */
export const ENGINE_OPTION = { engine: { type: "string" } } as const;

export const ENGINE_HELP =
  "  --engine DIR    the engine's --dir (or its client.json, copied 0600); default $PI_RESTATE_ENGINE";
