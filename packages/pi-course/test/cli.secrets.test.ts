/**
 * Usage errors never echo a value that may be a secret (issue 31, item 12): a key given to
 * `--api-key-env` instead of a variable name, a key glued to an unknown option, a wrong-typed
 * config value; and a config nested 200,000 levels deep is a usage error, not a crash.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CliUsageError, parseArgs } from "../src/cli/args.js";

const KEY = "sk-proj-Zq8v1X0cT3kqW9pP4mN7rL2sY6uH5jB0aD";
let dir = "";
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-cli-secrets-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The usage error `parseArgs` throws for these arguments. */
function usageError(argv: string[], env: NodeJS.ProcessEnv = {}): CliUsageError {
  try {
    parseArgs(argv, { HOME: dir, INIT_CWD: dir, ...env }, false);
  } catch (error) {
    if (error instanceof CliUsageError) return error;
    throw error;
  }
  throw new Error("parseArgs accepted the arguments");
}

describe("usage errors keep secrets out", () => {
  it("a key passed to --api-key-env is described by its length, never printed; a real variable name still is", () => {
    const server = ["--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--cwd", ".", "task"];
    const error = usageError([...server, "--api-key-env", KEY]);
    expect(error.message).not.toContain(KEY);
    expect(error.message).not.toContain(KEY.slice(0, 12));
    expect(error.message).toBe(
      `no API key: the variable --api-key-env names (a string of ${KEY.length} characters, not shown: it looks like a key, ` +
        "not a variable name) is not set. Set it, name another variable with --api-key-env NAME, or pass --no-api-key " +
        "for a local server that needs none.",
    );
    expect(usageError([...server, "--api-key-env", "MY_KEY"]).message).toMatch(/^no API key: \$MY_KEY is not set\./);
  });

  it("a key glued to an unknown option with = is not shown", () => {
    const error = usageError([`--api-key=${KEY}`]);
    expect(error.message).toBe("unknown option --api-key=… (value not shown).");
  });

  it("a wrong-typed config value is described by type and size, never echoed", async () => {
    const config = path.join(dir, "config.json");
    for (const [value, shown] of [
      [{ token: KEY }, "an object"],
      [[KEY, KEY], "an array of 2 items"],
      [42, "a number"],
      [true, "a boolean"],
      [null, "null"],
    ] as const) {
      await writeFile(config, JSON.stringify({ model: value }));
      const error = usageError(["--config", config]);
      expect(error.message).toBe(`the config file ${config}: model must be a non-empty string, got ${shown}.`);
      expect(error.message).not.toContain(KEY);
    }
  });

  it("a config nested 200,000 levels deep is a usage error, not a RangeError", async () => {
    const config = path.join(dir, "config.json");
    const depth = 200_000;
    await writeFile(config, `{"model":${"[".repeat(depth)}${"]".repeat(depth)}}`);
    expect(usageError(["--config", config]).message).toBe(
      `the config file ${config}: model must be a non-empty string, got an array of 1 item.`,
    );
    await writeFile(config, `${"[".repeat(depth)}${"]".repeat(depth)}`);
    expect(usageError(["--config", config]).message).toMatch(
      /must be one JSON object, e\.g\. \{"model": "gpt-4o-mini"\}, got an array of 1 item\.$/,
    );
  });
});
