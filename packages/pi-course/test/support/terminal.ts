/**
 * A real pseudo-terminal for tests, through util-linux `script`: the command runs with a pty as
 * its stdin, stdout and stderr (so `isTTY` is true, readline turns raw mode on, Ctrl-C is the byte
 * 0x03 typed into the terminal), and what we write to `script`'s stdin is typed into it.
 *
 * Why `script` and not node-pty: node-pty is a native addon that needs an install script, and
 * the repository allows none (`allowScripts`); `script` ships with util-linux on every Linux (and
 * as BSD `script` on macOS, with other flags: these tests run on Linux). Why not tmux: it keeps
 * a server process between tests and gives a screen to poll, where `script` is one child per
 * terminal that ends with the command and gives the byte stream itself.
 */
import { spawn } from "node:child_process";

/** Keys as a terminal sends them. */
export const KEY = {
  enter: "\r",
  altEnter: "\u001b\r",
  ctrlC: "\u0003",
  ctrlD: "\u0004",
  ctrlU: "\u0015",
  up: "\u001b[A",
} as const;

export interface PseudoTerminal {
  /** Types `text` into the terminal. */
  type(text: string): void;
  /**
   * Waits until the output, after what earlier waits consumed, shows `pattern` (escape sequences
   * and carriage returns removed); consumes up to the end of the match and returns the text up to
   * there. Rejects after `ms` with the output seen so far.
   */
  waitFor(pattern: string | RegExp, ms?: number): Promise<string>;
  /** All output so far, escape sequences and carriage returns removed. */
  text(): string;
  /** All output so far, as the terminal received it. */
  raw(): string;
  /** The command's exit code. */
  exit: Promise<number | null>;
  /** Kills the terminal's whole process group (cleanup). */
  kill(): void;
}

/** What a terminal shows without colours and cursor moves. */
export function plain(text: string): string {
  return text.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r/g, "");
}

function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** Runs `command` in a new pseudo-terminal of `columns` × `rows`. */
export function openTerminal(
  command: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; columns?: number; rows?: number },
): PseudoTerminal {
  const size = `stty cols ${options.columns ?? 80} rows ${options.rows ?? 30}`;
  const child = spawn(
    "script",
    ["-q", "-f", "-e", "-E", "never", "-c", `${size}; exec ${command.map(shellQuote).join(" ")}`, "/dev/null"],
    {
      cwd: options.cwd,
      env: options.env,
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    },
  );
  let output = "";
  let consumed = 0;
  const waiters = new Set<() => void>();
  const onData = (data: Buffer) => {
    output += data.toString("utf8");
    for (const wake of waiters) wake();
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  child.stdin!.on("error", () => {});
  const exit = new Promise<number | null>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      for (const wake of waiters) wake();
      resolve(code);
    });
  });
  const find = (pattern: string | RegExp): { end: number } | undefined => {
    const text = plain(output);
    const rest = text.slice(consumed);
    if (typeof pattern === "string") {
      const at = rest.indexOf(pattern);
      return at === -1 ? undefined : { end: consumed + at + pattern.length };
    }
    const match = pattern.exec(rest);
    return match === null ? undefined : { end: consumed + match.index + match[0].length };
  };
  return {
    type: (text) => void child.stdin!.write(text),
    waitFor(pattern, ms = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = find(pattern);
          if (found === undefined) {
            if (child.exitCode !== null || child.signalCode !== null)
              done(new Error(`the terminal ended before showing ${String(pattern)}`));
            return;
          }
          const text = plain(output).slice(0, found.end);
          consumed = found.end;
          done(undefined, text);
        };
        const timer = setTimeout(() => done(new Error(`no ${String(pattern)} within ${ms} ms`)), ms);
        const done = (error?: Error, text?: string) => {
          clearTimeout(timer);
          waiters.delete(check);
          if (error) reject(new Error(`${error.message}; the terminal showed:\n${plain(output).slice(consumed)}`));
          else resolve(text!);
        };
        waiters.add(check);
        check();
      });
    },
    text: () => plain(output),
    raw: () => output,
    exit,
    kill() {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // Already gone.
      }
    },
  };
}
