/**
 * Issue 41: a model-written script against the host. Nothing a script does may end the host
 * process or put more than the output limit into the answer.
 */
import { afterAll, expect, it } from "vitest";
import { CodeSandbox, type ScriptOutcome } from "../src/codemode/sandbox.js";

const sandbox = new CodeSandbox();
afterAll(() => sandbox.close());

const run = (code: string, maxOutputChars?: number): Promise<ScriptOutcome> =>
  sandbox.run({
    code,
    tools: [],
    callTool: async () => ({ text: "", isError: true }),
    ...(maxOutputChars !== undefined && { limits: { maxOutputChars } }),
  });

it("a script that replaces JSON.stringify gets a script error; the host and the next script go on", {
  timeout: 30_000,
}, async () => {
  for (const replacement of ['() => "not json {"', "() => '{\"a\":'", "() => { throw 1 }", "undefined"]) {
    const outcome = await run(`JSON.stringify = ${replacement}; return { a: 1 };`);
    expect(outcome.ok).toBe(false);
    expect(outcome.error?.kind).toBe("script");
  }
  const replaced = await run('JSON.stringify = () => "not json {"; return 1;');
  expect(replaced.error?.message).toBe("the script's return value is not JSON (was JSON.stringify replaced?)");
  expect(await run("return [1, 2];")).toMatchObject({ ok: true, value: [1, 2] });
});

it("a thrown error is capped like output: a 4 MB message, a thrown string, a long name", async () => {
  const max = 1_000;
  for (const thrown of [
    'new Error("E".repeat(4e6))',
    '"S".repeat(4e6)',
    'Object.assign(new Error("short"), { name: "N".repeat(4e6) })',
  ]) {
    const outcome = await run(`throw ${thrown};`, max);
    expect(outcome.ok).toBe(false);
    const message = outcome.error?.message ?? "";
    expect(message.length).toBeLessThan(max + 100);
    expect(message).toMatch(/more characters cut: output limit reached\]$/);
  }
}, 30_000);
