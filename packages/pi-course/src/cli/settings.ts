/**
 * Where each setting of `npm start` comes from: a flag, else an environment variable, else the
 * optional config file, else a default. One table (`SETTINGS`) says it for every setting, and
 * `--help` prints the same table, so the help cannot drift from what the code reads.
 *
 * The config file is JSON (`~/.pi-course/config.json`, or the file named by `--config` or
 * `$PI_COURSE_CONFIG`). It never holds the API key itself: it may name the variable that holds it
 * (`apiKeyEnv`), as `--api-key-env` does.
 */
import { homedir } from "node:os";
import path from "node:path";
import { Type } from "typebox";
import { type JsonPlace, checkJson, parseJson, readTextFile } from "../base/read-json.js";
import { PiCourseError } from "../base/errors.js";

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
  // #region ch17
  /** `--mcp-startup-timeout MS`, `$PI_COURSE_MCP_STARTUP_TIMEOUT_MS`, `"mcpStartupTimeoutMs"`: ms an MCP server has to start. */
  mcpStartupTimeoutMs?: string;
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
  // #region ch17
  mcpStartupTimeoutMs: {
    flag: "--mcp-startup-timeout",
    env: "PI_COURSE_MCP_STARTUP_TIMEOUT_MS",
    key: "mcpStartupTimeoutMs",
  },
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

// #region ch17
/** The folder of the CLI's MCP tokens: `~/.pi-course/mcp-auth` (`mcp login` writes them; `McpTokenStore`). */
export function mcpAuthFolder(env: NodeJS.ProcessEnv): string {
  return path.join(homeFolder(env), "mcp-auth");
}
// #endregion

/** A config file that cannot be used: the message says which file and what to do. */
export class ConfigError extends PiCourseError {
  override name = "ConfigError";
  /** Stable: `"CONFIG"`. */
  override readonly code = "CONFIG";
}

/** What the config file may hold: each setting as a non-empty string, no other key. */
const SettingsSchema = Type.Object(
  Object.fromEntries(
    Object.keys(SETTINGS).map((key) => [
      key,
      Type.Optional(Type.String({ pattern: "\\S", expected: "a non-empty string" })),
    ]),
  ),
  { additionalProperties: false, expected: 'one JSON object, e.g. {"model": "gpt-4o-mini"}' },
);

/**
 * Reads the config file: the one `explicit` names (it must exist), else `$PI_COURSE_CONFIG`
 * (must exist too), else `~/.pi-course/config.json` if it is there. Returns its settings and its
 * path (undefined when there is none). Throws `ConfigError` (read-json's wording, naming the
 * file) for a file that is not JSON, not an object, has an unknown key or a value that is not a
 * non-empty string, and for a key that looks like it holds an API key.
 */
export function readConfigFile(env: NodeJS.ProcessEnv, explicit?: string): { settings: Settings; file?: string } {
  const named = explicit ?? (env[CONFIG_VARIABLE] || undefined);
  const file = named === undefined ? path.join(homeFolder(env), "config.json") : path.resolve(named);
  const by = explicit !== undefined ? "--config" : `$${CONFIG_VARIABLE}`;
  const place: JsonPlace = {
    where: `the config file ${file}`,
    hideValues: true,
    error: (message, failure) =>
      new ConfigError(
        failure === "not-json"
          ? `${message}; fix it or move it away.`
          : failure === "shape"
            ? `${message}.`
            : `${message} (${by}).`,
      ),
  };
  const text = readTextFile(file, { ...place, ...(named === undefined && { ifMissing: () => undefined }) });
  if (text === undefined) return { settings: {} };
  // #region lab 13.1 readConfigFile
  const value = parseJson(text, Type.Unknown(), place);
  const known = Object.keys(SETTINGS);
  for (const key of typeof value === "object" && value !== null ? Object.keys(value) : []) {
    if (/key$/i.test(key) && !known.includes(key)) {
      throw new ConfigError(
        `${place.where} holds "${key}": keep API keys out of files others may read; ` +
          `name the variable that holds it with "apiKeyEnv", or use --api-key-file.`,
      );
    }
  }
  return { settings: checkJson(value, SettingsSchema, place) as Settings, file };
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
