/**
 * Where each setting of `npm start` comes from: a flag, else an environment variable, else the
 * optional config file, else a default. One table (`SETTINGS`) says it for every setting, and
 * `--help` prints the same table, so the help cannot drift from what the code reads.
 *
 * The config file is JSON (`~/.pi-course/config.json`, or the file named by `--config` or
 * `$PI_COURSE_CONFIG`). It never holds the API key itself: it may name the variable that holds it
 * (`apiKeyEnv`), as `--api-key-env` does.
 */
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";

/** The settings a run reads from flags, the environment or the config file. */
export interface Settings {
  provider?: string;
  baseUrl?: string;
  model?: string;
  apiKeyEnv?: string;
  sessionDir?: string;
  contextTokens?: string;
  // #region ch16
  /** `--codemode` (as "on"), `$PI_COURSE_CODEMODE`, `"codemode"`: 1, on, true or 0, off, false. */
  codemode?: string;
  // #endregion
  // #region ch18
  /** `--thinking LEVEL`, `$PI_COURSE_THINKING`, `"thinking"`: off, minimal, low, medium or high. */
  thinking?: string;
  // #endregion
}

export type SettingName = keyof Settings;

/** Where a setting's value came from (for `--help`, and for error messages that point at it). */
export type SettingSource = "flag" | "env" | "config" | "default";

export interface Setting {
  value: string;
  source: SettingSource;
}

/** How each setting is given: its flag, its environment variable (if any), its key in the file. */
export const SETTINGS: Readonly<Record<SettingName, { flag: string; env?: string; key: SettingName }>> = {
  provider: { flag: "--provider", env: "PI_COURSE_PROVIDER", key: "provider" },
  baseUrl: { flag: "--base-url", env: "PI_COURSE_BASE_URL", key: "baseUrl" },
  model: { flag: "--model", env: "PI_COURSE_MODEL", key: "model" },
  apiKeyEnv: { flag: "--api-key-env", key: "apiKeyEnv" },
  sessionDir: { flag: "--session-dir", env: "PI_COURSE_SESSION_DIR", key: "sessionDir" },
  contextTokens: { flag: "--context-tokens", env: "PI_COURSE_CONTEXT_TOKENS", key: "contextTokens" },
  // #region ch16
  codemode: { flag: "--codemode", env: "PI_COURSE_CODEMODE", key: "codemode" },
  // #endregion
  // #region ch18
  thinking: { flag: "--thinking", env: "PI_COURSE_THINKING", key: "thinking" },
  // #endregion
};

/** The variable naming another config file. */
export const CONFIG_VARIABLE = "PI_COURSE_CONFIG";

/** The home of pi-course's own files: `~/.pi-course` (`$HOME` first, so tests can move it). */
export function homeFolder(env: NodeJS.ProcessEnv): string {
  return path.join(env.HOME || homedir(), ".pi-course");
}

/** A config file that cannot be used: the message says which file and what to do. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * Reads the config file: the one `explicit` names (it must exist), else `$PI_COURSE_CONFIG`
 * (must exist too), else `~/.pi-course/config.json` if it is there. Returns its settings and its
 * path (undefined when there is none). Throws `ConfigError` for a file that is not JSON, not an
 * object, has an unknown key or a value that is not a non-empty string.
 */
export function readConfigFile(env: NodeJS.ProcessEnv, explicit?: string): { settings: Settings; file?: string } {
  const named = explicit ?? (env[CONFIG_VARIABLE] || undefined);
  const file = named === undefined ? path.join(homeFolder(env), "config.json") : path.resolve(named);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (named === undefined && code === "ENOENT") return { settings: {} };
    const by = explicit !== undefined ? "--config" : `$${CONFIG_VARIABLE}`;
    throw new ConfigError(`the config file ${file} (${by}) cannot be read (${code ?? String(error)}).`);
  }
  // #region lab 13.1 readConfigFile
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`the config file ${file} is not JSON (${(error as Error).message}); fix it or move it away.`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ConfigError(`the config file ${file} must hold one JSON object, e.g. {"model": "gpt-4o-mini"}.`);
  }
  const known = Object.keys(SETTINGS);
  const settings: Settings = {};
  for (const [key, v] of Object.entries(value)) {
    if (/key$/i.test(key) && !known.includes(key)) {
      throw new ConfigError(
        `the config file ${file} holds "${key}": keep API keys out of files others may read; ` +
          `name the variable that holds it with "apiKeyEnv", or use --api-key-file.`,
      );
    }
    if (!known.includes(key)) {
      throw new ConfigError(`the config file ${file} has an unknown key "${key}"; the keys are ${known.join(", ")}.`);
    }
    if (typeof v !== "string" || v.trim() === "") {
      throw new ConfigError(`the config file ${file}: "${key}" must be a non-empty string, got ${describeValue(v)}.`);
    }
    settings[key as SettingName] = v;
  }
  return { settings, file };
  // #endregion
}

/**
 * A value that may be a secret, as error messages show it: its type and size, never its text (a
 * key pasted where a name belongs must not reach a terminal or a log). Never recursive, so a
 * value nested a million levels deep is described like any other.
 */
export function describeValue(value: unknown): string {
  if (typeof value === "string") return `a string of ${value.length} characters`;
  if (Array.isArray(value)) return `an array of ${value.length} item${value.length === 1 ? "" : "s"}`;
  if (value === null) return "null";
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}

/**
 * The value of every setting and where it came from: the flag if given, else its environment
 * variable if set and not empty, else the config file's value, else `defaults`.
 */
export function resolveSettings(
  flags: Settings,
  env: NodeJS.ProcessEnv,
  file: Settings,
  defaults: Settings = {},
): Partial<Record<SettingName, Setting>> {
  const resolved: Partial<Record<SettingName, Setting>> = {};
  // #region lab 13.1 resolveSettings
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    const fromEnv = SETTINGS[name].env === undefined ? undefined : env[SETTINGS[name].env!];
    const candidates: [string | undefined, SettingSource][] = [
      [flags[name], "flag"],
      [fromEnv === "" ? undefined : fromEnv, "env"],
      [file[name], "config"],
      [defaults[name], "default"],
    ];
    const found = candidates.find(([value]) => value !== undefined);
    if (found !== undefined) resolved[name] = { value: found[0]!, source: found[1] };
  }
  // #endregion
  return resolved;
}

/** The lines of `--help` that say where each setting comes from. */
export function settingsHelp(): string {
  const names = Object.keys(SETTINGS) as SettingName[];
  // The columns as wide as their widest cell, so a long flag or variable never shifts a row.
  const flagWidth = Math.max(15, ...names.map((name) => SETTINGS[name].flag.length));
  const envWidth = Math.max(24, ...names.map((name) => (SETTINGS[name].env ?? "").length + 1));
  const rows = names.map((name) => {
    const { flag, env, key } = SETTINGS[name];
    return `  ${flag.padEnd(flagWidth)} ${(env ? `$${env}` : "-").padEnd(envWidth)} "${key}"`;
  });
  return [`  ${"flag".padEnd(flagWidth)} ${"else environment".padEnd(envWidth)} else config file key`, ...rows].join(
    "\n",
  );
}
