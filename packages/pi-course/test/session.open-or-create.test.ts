/**
 * `SessionFile.openOrCreate`: resume a conversation if its file exists, else start it; and the
 * session an `Agent` holds can be closed through `agent.session` (typed with `close`).
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { Agent } from "../src/agent/agent.js";
import { assistantMessage } from "../src/messages.js";
import { ScriptedModel } from "../src/models/scripted-model.js";
import { SessionFile, messagesOf } from "../src/session/session.js";
import { SessionLockedError } from "../src/session/session-lock.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "pi-open-or-create-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const says = (text: string) => new ScriptedModel([assistantMessage([{ type: "text", text }], "stop")]);

it("SessionFile.openOrCreate creates the file the first time, opens it (own header kept) after; agent.session closes it", async () => {
  const path = join(dir, "chat.jsonl");
  const first = await SessionFile.openOrCreate(path, { cwd: dir, id: "first-id" });
  expect(first.header).toMatchObject({ id: "first-id", cwd: dir });
  const agent = new Agent({ session: first, initialState: { model: says("Hello!") } });
  await agent.prompt("Hi");
  await agent.session?.close?.(); // typed: whoever opened the session closes it
  await expect(first.append({ type: "label", parentId: null, targetId: "x", label: "y" })).rejects.toThrow(/closed/);

  const again = await SessionFile.openOrCreate(path, { cwd: "/elsewhere", id: "second-id" });
  expect(again.header).toMatchObject({ id: "first-id", cwd: dir });
  const resumed = new Agent({ session: again, initialState: { model: says("Again.") } });
  expect(resumed.state.messages).toHaveLength(2);
  await resumed.prompt("Once more");
  await resumed.session?.close?.();
  expect(messagesOf((await SessionFile.open(path)).entries())).toHaveLength(4);
  expect((await readFile(path, "utf8")).split("\n")[0]).toContain('"first-id"');
});

it("SessionFile.openOrCreate from two callers at once: one gets the file, the other is refused as a second writer", async () => {
  const path = join(dir, "race.jsonl");
  const results = await Promise.allSettled([
    SessionFile.openOrCreate(path, { cwd: dir, id: "a" }),
    SessionFile.openOrCreate(path, { cwd: dir, id: "b" }),
  ]);
  const won = results.filter((r) => r.status === "fulfilled").map((r) => r.value);
  const lost = results.filter((r) => r.status === "rejected").map((r) => r.reason);
  expect(won).toHaveLength(1);
  expect(lost).toHaveLength(1);
  expect(lost[0]).toBeInstanceOf(SessionLockedError);
  const header = won[0]!.header;
  await won[0]!.close();
  const again = await SessionFile.openOrCreate(path, { cwd: dir, id: "c" });
  expect(again.header.id).toBe(header.id);
  await again.close();
  await expect(SessionFile.create(path, { cwd: dir })).rejects.toThrow(/already exists/);
});
