/**
 * The one-writer lock under simultaneous takers (issue 41, item 9): six real processes take the
 * lock of one session file at the same instant, 60 rounds, every other one from a stale lock (one
 * whose owner is gone); in every round exactly one of them holds it.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lockPathOf } from "../src/session/session-lock.js";
import { bundledScript } from "./support/bundled-script.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const TAKERS = 6;
const ROUNDS = 60;
const SPACING_MS = 120;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-session-lock-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Starts the takers, gives them time to load, and resolves with each round's "ok" count. */
async function race(folder: string): Promise<number[]> {
  const t0 = Date.now() + 8_000; // every taker has loaded by then, even on a loaded machine
  const children: ChildProcess[] = [];
  let finished = 0;
  const outputs = await Promise.all(
    Array.from({ length: TAKERS }, () => {
      const child = spawn(
        process.execPath,
        [
          bundledScript(path.join(here, "support", "lock-taker.ts")),
          folder,
          String(ROUNDS),
          String(t0),
          String(SPACING_MS),
        ],
        { stdio: ["pipe", "pipe", "inherit"] },
      );
      children.push(child);
      let out = "";
      let done = false;
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString("utf8");
        // every taker keeps its locks (it is alive) until all of them have answered every round
        if (done || out.split("\n").filter(Boolean).length < ROUNDS) return;
        done = true;
        if (++finished === TAKERS) for (const each of children) each.stdin!.end();
      });
      return new Promise<string>((resolve) =>
        child.on("close", () => {
          // one that died early must not leave the others waiting for the end of their stdin
          for (const each of children) each.stdin!.end();
          resolve(out);
        }),
      );
    }),
  );
  const held = Array.from({ length: ROUNDS }, () => 0);
  let answers = 0;
  for (const out of outputs) {
    for (const line of out.split("\n").filter(Boolean)) {
      const [round, answer] = line.split(" ");
      answers++;
      if (answer === "ok") held[Number(round)]!++;
    }
  }
  expect(answers).toBe(TAKERS * ROUNDS);
  return held;
}

describe("the session lock under simultaneous takers", () => {
  it(`${TAKERS} processes at once, ${ROUNDS} rounds, every other one from a stale lock: exactly one holds it each round`, async () => {
    // a pid that ran and is gone: a lock it names is stale
    const gone = Number(execFileSync("sh", ["-c", "sh -c 'echo $$'"], { encoding: "utf8" }).trim());
    for (let r = 1; r < ROUNDS; r += 2) {
      const owner = { pid: gone, start: "", host: hostname() };
      writeFileSync(lockPathOf(path.join(dir, `${r}.jsonl`)), `${JSON.stringify(owner)}\n`);
    }
    const held = await race(dir);
    expect({ fromNoLock: held.filter((_, r) => r % 2 === 0), fromStale: held.filter((_, r) => r % 2 === 1) }).toEqual({
      fromNoLock: Array.from({ length: ROUNDS / 2 }, () => 1),
      fromStale: Array.from({ length: ROUNDS / 2 }, () => 1),
    });
  }, 60_000);
});
