/**
 * Builds eval case folders on disk for the tests of chapter 14 (see src/eval/case-format.ts).
 */
import { chmod, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { RunRecord } from "../../src/eval/run-record.js";

/** A scripted turn as script.json writes it. */
export interface TurnSpec {
  text?: string;
  toolCalls?: { name: string; arguments: unknown }[];
  error?: string;
  usage?: { input: number; output: number };
}

export interface CaseSpec {
  task?: string;
  /** Files of the starting workspace, by relative path. */
  files?: Record<string, string>;
  /** The check's shell script body (after `#!/bin/sh`). */
  check?: string;
  caseJson?: unknown;
  /** script.json's content: a list of turns, or the whole object. */
  script?: TurnSpec[] | Record<string, unknown>;
}

/** Writes the case `name` under `suite` and returns its folder. */
export async function writeCase(suite: string, name: string, spec: CaseSpec): Promise<string> {
  const dir = path.join(suite, name);
  await mkdir(path.join(dir, "files"), { recursive: true });
  await writeFile(path.join(dir, "task.md"), spec.task ?? `Task of ${name}.\n`);
  for (const [file, content] of Object.entries(spec.files ?? {})) {
    await mkdir(path.dirname(path.join(dir, "files", file)), { recursive: true });
    await writeFile(path.join(dir, "files", file), content);
  }
  await writeFile(path.join(dir, "check"), `#!/bin/sh\n${spec.check ?? "exit 0"}\n`);
  await chmod(path.join(dir, "check"), 0o755);
  if (spec.caseJson !== undefined) await writeFile(path.join(dir, "case.json"), JSON.stringify(spec.caseJson));
  if (spec.script !== undefined) {
    await writeFile(
      path.join(dir, "script.json"),
      JSON.stringify(Array.isArray(spec.script) ? { turns: spec.script } : spec.script),
    );
  }
  return dir;
}

/** A script that runs one bash command, then answers. */
export function bashThenAnswer(command: string, answer = "Done."): TurnSpec[] {
  return [{ text: "Running it.", toolCalls: [{ name: "bash", arguments: { command } }] }, { text: answer }];
}

/** A finished run of case `name` as the report reads it: one turn, two tokens, no cost. */
export function runRecord(name: string, repeat: number, status: RunRecord["status"]): RunRecord {
  return {
    case: name,
    repeat,
    status,
    protocolProblems: [],
    model: "m",
    turns: 1,
    tokens: { input: 1, output: 1, total: 2 },
    cost: null,
    startedAt: new Date(0).toISOString(),
    wallMs: 5,
    notes: [],
  };
}
