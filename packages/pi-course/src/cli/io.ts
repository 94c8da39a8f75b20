/** Where the command line writes and what it reads: the terminal of a conversation, and the streams of a run. */
import type { Readable, Writable } from "node:stream";

/** The terminal of a conversation (interactive.ts). */
export interface TerminalIO {
  input: Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  output: Writable & { columns?: number; isTTY?: boolean };
  color: boolean;
}

/** Where the main job writes; tests pass their own. `stdin` is read in the interactive mode only. */
export interface CliIO {
  stdout: { write(text: string): unknown; isTTY?: boolean; columns?: number };
  stderr: { write(text: string): unknown };
  stdin?: TerminalIO["input"];
  env: NodeJS.ProcessEnv;
}

/** A person at the terminal, for a feature that must ask while a run goes on (an MCP server's form). */
export interface Questioner {
  /** Writes a line of its own above the prompt line. */
  say(text: string): void;
  /**
   * Asks on the prompt line; undefined when the person cancels (Ctrl-C) or leaves, or when `signal`
   * fires (whoever asked no longer waits: the question leaves the prompt line).
   */
  ask(question: string, signal?: AbortSignal): Promise<string | undefined>;
}
