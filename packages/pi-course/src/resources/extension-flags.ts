/**
 * The command-line options extensions add (`ExtensionAPI.registerFlag`): checked when an
 * extension registers one, committed with the rest of what it registered, and given their values
 * once the command line is read again with them (the CLI reads it twice: without them, to find
 * the extensions, then with them).
 */
import type { ExtensionFlag } from "./extension-api.js";
import type { ResourceWarning } from "./types.js";

/** A flag as registered: its name (without `--`), its kind and its default. */
export interface RegisteredFlag {
  name: string;
  description: string;
  type: "boolean" | "string";
  default: boolean | string | undefined;
  /** The extension that registered it (its file). */
  extension: string;
}

const FLAG_NAME = /^[a-z0-9][a-z0-9-]*$/;

/** Checks what `registerFlag(name, flag)` was given; throws `TypeError` saying what to fix. */
export function checkedFlag(name: string, flag: ExtensionFlag, extension: string): RegisteredFlag {
  if (typeof name !== "string" || !FLAG_NAME.test(name))
    throw new TypeError(`flag name "${name}": use a-z, 0-9 and -, a letter or digit first, without the leading --`);
  if (typeof flag?.description !== "string") throw new TypeError(`flag --${name} needs a description`);
  const type = flag.type ?? "boolean";
  if (type !== "boolean" && type !== "string")
    throw new TypeError(`flag --${name}: its type is "boolean" or "string", got ${JSON.stringify(flag.type)}`);
  if (flag.default !== undefined && typeof flag.default !== type)
    throw new TypeError(`flag --${name}: its default must be a ${type}`);
  return { name, description: flag.description, type, default: flag.default, extension };
}

/** Every flag that loaded, and the values the command line gave them. */
export class ExtensionFlags {
  private readonly flags = new Map<string, RegisteredFlag>();
  private readonly given = new Map<string, boolean | string>();

  /** `reserved`: the CLI's own option names (an extension cannot take them). */
  constructor(private readonly reserved: readonly string[] = []) {}

  /**
   * Registers `staged` (one extension's flags); a name taken (the CLI's, or an earlier
   * extension's) is left out with a warning. Returns the names registered.
   */
  commit(staged: readonly RegisteredFlag[], warnings: ResourceWarning[]): string[] {
    const names: string[] = [];
    for (const flag of staged) {
      if (this.reserved.includes(flag.name) || this.flags.has(flag.name)) {
        warnings.push({
          path: flag.extension,
          message: `its flag --${flag.name} is left out: another option has that name`,
        });
        continue;
      }
      this.flags.set(flag.name, flag);
      names.push(flag.name);
    }
    return names;
  }

  /** Every flag registered, in registration order. */
  list(): RegisteredFlag[] {
    return [...this.flags.values()];
  }

  /** Sets the values the command line gave (by flag name; names no flag has are ignored). */
  setValues(values: ReadonlyMap<string, boolean | string>): void {
    for (const [name, value] of values) if (this.flags.has(name)) this.given.set(name, value);
  }

  /** A flag's value: given on the command line, else its default; `undefined` for a name not registered. */
  get(name: string): boolean | string | undefined {
    return this.given.get(name) ?? this.flags.get(name)?.default;
  }
}
