/**
 * A one-case suite for runs against a model server: `greet` ("Say hello."; its check always
 * passes), and the Chat Completions answer a recording server replays for it.
 */
import { chmod, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";

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
