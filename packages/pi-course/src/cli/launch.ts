/**
 * How `npm start` keeps the API key away from the commands the model runs.
 *
 * A command can read the environment block of any process of its user (`/proc/<pid>/environ`),
 * its ancestors first. That block is fixed at `exec`: deleting `process.env.OPENAI_API_KEY`
 * does not erase it. So the process that received the key (and npm, the shells and tsx that
 * started it) must not be an ancestor of the commands:
 *
 * 1. The launcher (this process, started by npm) starts the agent through a short-lived middle
 *    process, which exits at once: the agent is adopted by init (or the nearest subreaper) and
 *    has none of the launch chain above it. Its environment is the launcher's without the key
 *    and without any variable that looks like a secret (as `commandEnvironment` leaves out).
 * 2. The key travels over a private Unix socket (in a folder only this user can enter, removed
 *    once the agent has connected), never through an environment or a command line. The folder
 *    does not keep out other processes of the same user, so the launcher gives the key only to
 *    a connection that first proves it is the agent it started: a one-time token (32 random
 *    bytes) that only the agent has, read from a pipe the launcher hands down as file
 *    descriptor 3 (through the middle process). A connection with no token or a wrong one is
 *    closed with nothing sent, and the launcher goes on waiting for the agent.
 * 3. The launcher stays until the agent ends and exits with its code. It forwards SIGINT,
 *    SIGTERM and SIGHUP unless the agent reports it already got the same signal (a Ctrl-C
 *    reaches the whole process group, the agent included), and tells the agent to stop when it
 *    loses the socket or one of its ancestors in its process group ends (`kill` of the npm
 *    process only: npm does not pass it on). The agent stops when the socket closes.
 *
 * What this cannot do: npm and the shell that ran it keep what the user exported, and a
 * command can still read those by pid (not as its ancestors). `--api-key-file` keeps the key
 * out of every environment. Linux and macOS; elsewhere the agent runs in this process.
 */
import { spawn } from "node:child_process";
import { randomBytes, timingSafeEqual } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { type Server, Socket, createConnection, createServer } from "node:net";
import type { Writable } from "node:stream";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  CliUsageError,
  DEFAULT_KEY_VARIABLE,
  commandName,
  helpText,
  keyVariable,
  versionText,
  keyVariables,
  readCommandLine,
  usageMessage,
} from "./args.js";
import { COMMANDS } from "./commands.js";
import { FEATURES } from "./options.js";

/**
 * Names left out of the agent's environment besides the key's variable: the same as
 * `SECRET_NAME_PATTERN` of coding-tools/bash.ts (a test keeps them equal). Not imported from
 * there: that module loads TypeBox, seconds of start-up on a busy machine, for a launcher
 * that only waits.
 */
export const LAUNCH_SECRET_PATTERN = /(API_?KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)/i;

/** Set in the agent's environment: the path of the launcher's socket. */
export const AGENT_SOCKET_VARIABLE = "PI_COURSE_AGENT_SOCKET";

/** The agent's file descriptor that carries the one-time token (a pipe from the launcher). */
export const TOKEN_FD = 3;

const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
type Forwarded = (typeof FORWARDED)[number];
const SIGNAL_NUMBERS: Record<Forwarded, number> = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 };

/** Whether this platform runs the agent apart (see the file comment). */
export const canLaunchApart = process.platform === "linux" || process.platform === "darwin";

/**
 * Help, the version and usage errors need no agent: answered here (and the process exits), unless reading the
 * options would read a file the agent must read.
 */
function answerWithoutAgent(argv: readonly string[]): void {
  // stdin, or a pipe such as <(pass show openai), can be read only once: the agent reads it.
  let check = !argv.includes("--prompt-file") && !argv.includes("--api-key-file");
  // A command of a later chapter (chapter 14's `eval`) reads its own options, in the agent.
  if (COMMANDS.some((command) => command.name === argv[0] && command.name !== "export")) check = false;
  if (check) {
    try {
      const terminal = { stdinIsTTY: process.stdin.isTTY === true, stdoutIsTTY: process.stdout.isTTY === true };
      const kind = readCommandLine(argv, process.env, terminal).kind;
      if (kind === "help" || kind === "version") {
        process.stdout.write(kind === "help" ? helpText(commandName(process.env)) : versionText());
        process.exit(0);
      }
    } catch (error) {
      if (!(error instanceof CliUsageError)) throw error;
      process.stderr.write(usageMessage(error, process.env));
      process.exit(2);
    }
  }
}

/**
 * The variables handed over to the agent (the only secrets it gets): the one the options read the
 * key from, each model's provider's (a route a feature picked: a model catalogue's name), and
 * those a feature names (`handOver`: the MCP configurations').
 */
function keyHandover(argv: readonly string[]): {
  named: string | undefined;
  handover: Record<string, string>;
  catalogueKeys: readonly string[];
} {
  // The variable the options will read the key from (see args.ts): the only one handed over.
  const named = keyVariable(argv, process.env);
  const handover: Record<string, string> = {};
  if (named !== undefined && process.env[named] !== undefined) handover[named] = process.env[named]!;
  // A catalogue name picks its provider's key variable; a fallback list may need one per provider.
  const catalogueKeys = keyVariables(argv, process.env);
  const features = FEATURES.flatMap((feature) => feature.handOver?.(argv, process.env) ?? []);
  for (const name of [...catalogueKeys, ...features]) {
    if (process.env[name] !== undefined && handover[name] === undefined) handover[name] = process.env[name]!;
  }
  return { named, handover, catalogueKeys };
}

/**
 * The launcher's socket server: a connection is the agent only once it has sent `token`; `accept`
 * gets the first that does, and every connection once `taken()` is refused.
 */
function agentServer(token: Buffer, taken: () => boolean, accept: (connection: Socket) => void): Server {
  // A connection is the agent only once it has sent the token (`token <hex>\n`, within 10 s).
  return createServer((connection) => {
    if (taken()) return connection.destroy();
    connection.on("error", () => {});
    connection.setTimeout(10_000, () => connection.destroy());
    let heard = "";
    const onData = (data: Buffer) => {
      heard += data.toString("utf8");
      const at = heard.indexOf("\n");
      if (at === -1) {
        if (heard.length > 200) connection.destroy();
        return;
      }
      connection.off("data", onData);
      const [word, value = ""] = heard.slice(0, at).split(" ");
      const given = Buffer.from(value, "utf8");
      const expected = Buffer.from(token.toString("hex"), "utf8");
      const proven = word === "token" && given.length === expected.length && timingSafeEqual(given, expected);
      if (!proven || taken()) return connection.destroy();
      connection.setTimeout(0);
      accept(connection);
    };
    connection.on("data", onData);
  });
}

/**
 * The launcher: starts the agent apart from this process and exits with its exit code (never
 * resolves). `argv` is the command line after the script.
 */
export async function launchAgent(argv: readonly string[]): Promise<never> {
  answerWithoutAgent(argv);
  const keys = keyHandover(argv);
  const { named, handover } = keys;
  const defaults: readonly string[] = Object.values(DEFAULT_KEY_VARIABLE);

  const folder = mkdtempSync(path.join(tmpdir(), "pi-course-agent-"));
  const socketPath = path.join(folder, "s");
  let agent: Socket | undefined;
  let agentPid: number | undefined;
  let exitCode: number | undefined;
  let stoppedBy: Forwarded | undefined;
  // When the agent last reported each signal.
  const acked: Partial<Record<Forwarded, number>> = {};

  const token = randomBytes(32);
  const server = agentServer(
    token,
    () => agent !== undefined,
    (connection) => accept(connection),
  );
  const accept = (connection: Socket) => {
    agent = connection;
    server.close();
    rmSync(folder, { recursive: true, force: true });
    // The middle process leaves now; the agent waits for that before it starts any command.
    middle.kill("SIGTERM");
    connection.write(`${JSON.stringify(handover)}\n`);
    let buffered = "";
    connection.on("data", (data: Buffer) => {
      buffered += data.toString("utf8");
      for (let at = buffered.indexOf("\n"); at !== -1; at = buffered.indexOf("\n")) {
        const [word, value] = buffered.slice(0, at).split(" ");
        buffered = buffered.slice(at + 1);
        if (word === "pid") agentPid = Number(value);
        else if (word === "signal") acked[value as Forwarded] = Date.now();
        else if (word === "exit") exitCode = Number(value);
      }
    });
    connection.on("close", () => {
      if (exitCode === undefined) {
        // On a terminal the agent may have left a status line open (the elapsed-time ticker, a
        // streamed answer): the error starts a line of its own instead of being glued to it.
        const lead = process.stderr.isTTY === true ? "\n" : "";
        process.stderr.write(`${lead}error: the agent process ended without an exit code (was it killed?).\n`);
      }
      process.exit(exitCode ?? (stoppedBy ? 128 + SIGNAL_NUMBERS[stoppedBy] : 1));
    });
  };
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  // The middle process starts the agent and leaves once it has connected, so init adopts it.
  const env: NodeJS.ProcessEnv = { [AGENT_SOCKET_VARIABLE]: socketPath };
  for (const [name, value] of Object.entries(process.env)) {
    if (name !== named && !defaults.includes(name) && !LAUNCH_SECRET_PATTERN.test(name)) env[name] = value;
  }
  for (const name of keys.catalogueKeys) delete env[name];
  // Everything handed over travels on the socket only (an MCP config's ${DATABASE_URL} too,
  // whatever its name looks like): the agent's environment, which its commands inherit, has none.
  for (const name of Object.keys(handover)) delete env[name];
  const agentArgs = [process.execPath, ...process.execArgv, path.resolve(process.argv[1]!), ...argv];
  const middle = spawn("/bin/sh", ["-c", MIDDLE, "pi-course-middle", ...agentArgs], {
    env,
    stdio: ["inherit", "inherit", "inherit", "pipe"],
  });
  const tokenPipe = middle.stdio[TOKEN_FD] as Writable;
  // An agent that ends before it reads the token resets the pipe: its exit (below) says what happened.
  tokenPipe.on("error", () => {});
  tokenPipe.end(`${token.toString("hex")}\n`);
  middle.on("error", (error) => {
    rmSync(folder, { recursive: true, force: true });
    process.stderr.write(`error: cannot start the agent: ${error.message}\n`);
    process.exit(1);
  });
  middle.on("exit", (code) => {
    if (agent !== undefined) return;
    // The agent ended (or never started) before it connected: its code is the middle's.
    rmSync(folder, { recursive: true, force: true });
    process.exit(code ?? 1);
  });

  const forward = (signal: Forwarded) => {
    stoppedBy ??= signal;
    if (agentPid === undefined) {
      // Not connected yet: nothing has run. Stop the start; an agent that connects later fails.
      middle.kill("SIGKILL");
      rmSync(folder, { recursive: true, force: true });
      process.exit(128 + SIGNAL_NUMBERS[signal]);
    }
    const at = Date.now();
    // The agent may have got the same signal (a Ctrl-C reaches the whole group): if it reports
    // one from around the same moment, it is not sent twice (twice would be a second Ctrl-C).
    setTimeout(() => {
      if ((acked[signal] ?? -Infinity) >= at - 1000) return;
      try {
        process.kill(agentPid!, signal);
      } catch {
        // ESRCH: it has ended.
      }
    }, 50);
  };
  for (const signal of FORWARDED) process.on(signal, () => forward(signal));

  watchAncestors(() => forward("SIGHUP"));
  return new Promise<never>(() => {});
}

/**
 * The middle process, a POSIX shell (a second Node process cost the start as much as the agent's
 * own boot): starts the agent (its arguments) with this process's stdio, stdin too (through
 * descriptor 4: a background command's stdin is /dev/null before its redirections), and its
 * descriptor 3 (the token pipe); ignores SIGINT and SIGHUP (Node restores the defaults in the
 * agent); leaves on SIGTERM (sent once the agent has connected), or with the agent's exit code
 * if it ends before (1 for an agent a signal ended).
 */
const MIDDLE = `trap '' INT HUP
trap 'exit 0' TERM
exec 4<&0
"$@" <&4 4<&- &
wait $!
code=$?
if [ "$code" -gt 128 ]; then exit 1; fi
exit "$code"`;

/**
 * Calls `onLoss` once when a process above this one in its process group ends (polled every
 * 250 ms; Linux only, where `/proc` says who the ancestors are).
 */
function watchAncestors(onLoss: () => void): void {
  const group = statOf(process.pid)?.pgid;
  if (group === undefined) return;
  const ancestors: { pid: number; start: string }[] = [];
  for (let pid = process.ppid; pid > 1; ) {
    const stat = statOf(pid);
    if (stat === undefined || stat.pgid !== group) break;
    ancestors.push({ pid, start: stat.start });
    pid = stat.ppid;
  }
  const timer = setInterval(() => {
    if (ancestors.every(({ pid, start }) => statOf(pid)?.start === start && statOf(pid)?.state !== "Z")) return;
    clearInterval(timer);
    onLoss();
  }, 250);
  timer.unref();
}

/** Fields of `/proc/<pid>/stat`, or undefined when it is gone (or off Linux). */
function statOf(pid: number): { state: string; ppid: number; pgid: number; start: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // After the command name in parentheses: state ppid pgrp session … (starttime is field 22).
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { state: fields[0]!, ppid: Number(fields[1]), pgid: Number(fields[2]), start: fields[19]! };
  } catch {
    return undefined;
  }
}

/** The agent's end of the launcher's socket. */
export interface AgentChannel {
  /** The variables the launcher handed over (the API key), to read the options with. */
  handover: Record<string, string>;
  /** Tells the launcher this process got `signal`, so it does not forward it again. */
  acknowledge(signal: string): void;
  /** Tells the launcher the exit code this process is about to exit with (resolves once sent, 200 ms at most). */
  sendExit(code: number): Promise<void>;
}

/** In the agent: the one-time token from descriptor `TOKEN_FD` (read to its end, then closed). */
function readToken(): Promise<string> {
  return new Promise((resolve, reject) => {
    let input: Socket;
    try {
      input = new Socket({ fd: TOKEN_FD, readable: true, writable: false });
    } catch (error) {
      reject(new Error(`no token on descriptor ${TOKEN_FD} (${(error as Error).message})`));
      return;
    }
    let text = "";
    input.setEncoding("utf8");
    input.on("data", (data: string) => {
      text += data;
    });
    input.on("error", (error) =>
      reject(new Error(`cannot read the token on descriptor ${TOKEN_FD} (${error.message})`)),
    );
    input.on("end", () => {
      input.destroy();
      const token = text.trim();
      if (/^[0-9a-f]{64}$/.test(token)) resolve(token);
      else reject(new Error(`descriptor ${TOKEN_FD} did not carry the launcher's token`));
    });
  });
}

/**
 * In the agent: reads the one-time token (descriptor 3), connects to the launcher named by
 * `AGENT_SOCKET_VARIABLE`, proves itself with the token, reads the handover, and reports this
 * process's id. `onLost` runs if the launcher goes away.
 */
export async function connectToLauncher(socketPath: string, onLost: () => void): Promise<AgentChannel> {
  const token = await readToken();
  return new Promise((resolve, reject) => {
    const socket = createConnection(socketPath);
    socket.write(`token ${token}\n`);
    const middle = process.ppid;
    let buffered = "";
    let ready = false;
    socket.on("error", (error) => {
      if (!ready) reject(error);
    });
    socket.on("close", () => {
      if (ready) onLost();
    });
    socket.on("data", (data: Buffer) => {
      if (ready) return;
      buffered += data.toString("utf8");
      const at = buffered.indexOf("\n");
      if (at === -1) return;
      ready = true;
      const handover = JSON.parse(buffered.slice(0, at)) as Record<string, string>;
      socket.write(`pid ${process.pid}\n`);
      socket.unref();
      // Start nothing while the launch chain is still above this process.
      const until = Date.now() + 5000;
      while (process.ppid === middle && Date.now() < until)
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
      resolve({
        handover,
        acknowledge: (signal) => void socket.write(`signal ${signal}\n`),
        sendExit: (code) =>
          new Promise<void>((done) => {
            setTimeout(done, 200).unref();
            socket.end(`exit ${code}\n`, done);
          }),
      });
    });
  });
}
