/**
 * What the `bash` tool does around a command's processes: the environment they get (without
 * what looks like a secret), the marker every process of one call carries, and killing what a
 * command leaves behind, at its end or when this process exits. See bash.ts's file comment for
 * the guarantees and their limits.
 */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";

/** Names of variables `commandEnvironment` leaves out (besides `OPENAI_API_KEY`). */
export const SECRET_NAME_PATTERN = /(API_?KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)/i;

/**
 * `env` (default: `process.env`) without the variables that look like secrets (see the file
 * comment) and without the names in `alsoDrop` (e.g. the variable an API key was read from).
 */
export function commandEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  alsoDrop: readonly string[] = [],
): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (name === "OPENAI_API_KEY" || SECRET_NAME_PATTERN.test(name) || alsoDrop.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

/** The variable that marks every process a call started (see the file comment). */
export const CALL_MARKER_VARIABLE = "PI_COURSE_CALL";

/** A fresh value for `CALL_MARKER_VARIABLE`, unique to one call. */
export function newCallMarker(): string {
  return randomBytes(12).toString("hex");
}

/**
 * SIGKILL to every process whose environment holds `PI_COURSE_CALL=<marker>` for one of
 * `markers`, found by reading `/proc/<pid>/environ` (the block each process was started with;
 * only processes this user may inspect are seen). Passes repeat until one finds nothing, so a
 * process forked during a pass dies in the next. Returns how many processes got the signal;
 * always 0 off Linux. Synchronous, so it also runs in a process `exit` handler.
 */
export function killMarkedProcesses(markers: Iterable<string>): number {
  const needles = [...markers].map((marker) => Buffer.from(`${CALL_MARKER_VARIABLE}=${marker}\0`));
  if (process.platform !== "linux" || needles.length === 0) return 0;
  let killed = 0;
  for (let pass = 0; pass < 16; pass++) {
    let found = 0;
    let entries: string[];
    try {
      entries = readdirSync("/proc");
    } catch {
      return killed;
    }
    for (const name of entries) {
      const first = name.charCodeAt(0);
      if (first < 48 || first > 57 || Number(name) === process.pid) continue;
      let environ: Buffer;
      try {
        environ = readFileSync(`/proc/${name}/environ`);
      } catch {
        continue; // gone, or another user's
      }
      if (!needles.some((needle) => environ.includes(needle))) continue;
      try {
        process.kill(Number(name), "SIGKILL");
        found++;
      } catch {
        // ESRCH: it ended meanwhile.
      }
    }
    killed += found;
    if (found === 0) break;
  }
  return killed;
}

/**
 * Commands that are still running: process group id → call marker. When this process exits
 * (`process.exit` on a second Ctrl-C or a closed pipe, or the end of the program) there is no
 * time left for a grace period, so every group still alive, and every process carrying one of
 * their markers, gets SIGKILL: a child that ignores SIGTERM does not outlive the agent. A
 * process ended by a signal runs no `exit` handler: its signal handler should call
 * `killLiveProcessGroups()` itself (the CLI does, for SIGINT, SIGTERM and SIGHUP).
 */
const liveGroups = new Map<number, string | undefined>();
let exitHookInstalled = false;

/** Remembers a running command's process group and call marker (call right after the spawn). */
export function trackProcessGroup(pid: number, marker?: string): void {
  liveGroups.set(pid, marker);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on("exit", killLiveProcessGroups);
  }
}

/** Forgets a process group once its command has ended (and its leftovers were killed). */
export function untrackProcessGroup(pid: number): void {
  liveGroups.delete(pid);
}

/** Sends `signal` (default SIGKILL) to the process group `pid` leads. Contract: never throws; a group already gone is no error. */
export function killGroup(pid: number, signal: NodeJS.Signals = "SIGKILL"): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/**
 * Kills what a command left behind when it ended: SIGKILL to its process group, then to every
 * process carrying its call marker. Returns how many marked processes had to be killed.
 */
export function killLeftovers(pid: number, marker: string | undefined): number {
  killGroup(pid);
  return marker === undefined ? 0 : killMarkedProcesses([marker]);
}

/** Sends SIGKILL to every tracked process group and marked process; runs on process `exit`. */
export function killLiveProcessGroups(): void {
  for (const pid of liveGroups.keys()) killGroup(pid);
  killMarkedProcesses([...liveGroups.values()].filter((marker): marker is string => marker !== undefined));
  liveGroups.clear();
}
