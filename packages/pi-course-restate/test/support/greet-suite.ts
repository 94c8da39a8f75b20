/**
 * A one-case suite for runs against a model server: `greet` ("Say hello."; its check always
 * passes), the Chat Completions answer a recording server replays for it, and the whole set-up of
 * the tests that run it through an engine (`greetOnEngine`).
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type ChatReplayServer, startChatReplayServer } from "../../../pi-course/test/support/chat-replay-server.js";
import type { Engine } from "../../src/engine.js";
import { type EngineAndWorker, engineAndWorker } from "./fleet.js";

/** Writes the suite under `root` and returns its folder. */
export async function writeGreetSuite(root: string): Promise<string> {
  const greet = path.join(root, "suite", "greet");
  await mkdir(path.join(greet, "files"), { recursive: true });
  await writeFile(path.join(greet, "task.md"), "Say hello.\n");
  await writeFile(path.join(greet, "files", "README.md"), "A workspace.\n");
  await writeFile(path.join(greet, "case.json"), JSON.stringify({ timeLimitSeconds: 60, maxTurns: 2 }));
  await writeFile(path.join(greet, "check"), "#!/bin/sh\nexit 0\n");
  await chmod(path.join(greet, "check"), 0o755);
  return path.dirname(greet);
}

/** A Chat Completions SSE body that answers `text`. */
export function answer(text: string): string {
  const chunk = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  return `${chunk({ role: "assistant", content: text }, null)}${chunk({}, "stop")}data: [DONE]\n\n`;
}

/** The greet suite, a recording model server that answers it, and an engine with one worker on it. */
export interface GreetOnEngine {
  /** The test's folder (a new one under the system's temporary folder). */
  root: string;
  /** The suite's folder (the worker's only suite). */
  suite: string;
  /** The model server; it answers "hello" once and records every request (their keys). */
  model: ChatReplayServer;
  engine: Engine;
  /** Stops the worker, the engine and the model server, and removes the folder: whatever of it started. */
  stop(): Promise<void>;
}

/**
 * Writes the greet suite in a new folder named `prefix…`, starts the model server, then an engine
 * and one worker whose environment adds `env` (the model's key, which only the worker holds) and
 * whose suite folder is the greet suite. What did start is stopped if a later part fails.
 */
export async function greetOnEngine(prefix: string, env: Record<string, string>): Promise<GreetOnEngine> {
  const root = await mkdtemp(path.join(tmpdir(), prefix));
  let model: ChatReplayServer | undefined;
  let started: EngineAndWorker | undefined;
  const stop = async () => {
    await started?.stop();
    await model?.close();
    await rm(root, { recursive: true, force: true });
  };
  try {
    const suite = await writeGreetSuite(root);
    model = await startChatReplayServer([answer("hello")]);
    started = await engineAndWorker(path.join(root, "restate"), { env, suites: [suite] });
    return { root, suite, model, engine: started.engine, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
