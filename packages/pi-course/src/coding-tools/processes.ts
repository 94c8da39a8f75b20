/**
 * What the `bash` tool does around a command's processes: the environment they get (without
 * what looks like a secret), the marker every process of one call carries, and killing what a
 * command leaves behind, at its end or when this process exits. See bash.ts's file comment for
 * the guarantees and their limits.
 */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

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
 * SIGKILL (or `signal`) to every process whose environment holds `PI_COURSE_CALL=<marker>` for one
 * of `markers`, found by reading `/proc/<pid>/environ` (the block each process was started with;
 * only processes this user may inspect are seen). With SIGKILL, passes repeat until one finds
 * nothing, so a process forked during a pass dies in the next; any other signal is sent in one
 * pass (a process asked to stop may take its time). Returns how many processes got the signal;
 * always 0 off Linux. Synchronous, so it also runs in a process `exit` handler.
 */
export function killMarkedProcesses(markers: Iterable<string>, signal: NodeJS.Signals = "SIGKILL"): number {
  const needles = [...markers].map((marker) => Buffer.from(`${CALL_MARKER_VARIABLE}=${marker}\0`));
  if (process.platform !== "linux" || needles.length === 0) return 0;
  const killed = new Set<number>(); // a process found again while its SIGKILL lands counts once
  for (let pass = 0; pass < 16; pass++) {
    let found = 0;
    let entries: string[];
    try {
      entries = readdirSync("/proc");
    } catch {
      return killed.size;
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
        process.kill(Number(name), signal);
        killed.add(Number(name));
        found++;
      } catch {
        // ESRCH: it ended meanwhile.
      }
    }
    if (found === 0 || signal !== "SIGKILL") break;
  }
  return killed.size;
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

/**
 * Sends SIGKILL to every tracked process group and marked process, and to what each tracked
 * process has started that still descends from it (one that left the group and scrubbed the
 * marker, see `descendantsOf`); runs on process `exit`.
 */
export function killLiveProcessGroups(): void {
  // only a process that still carries its marker is the one tracked (its pid may be another's now)
  for (const [pid, marker] of liveGroups)
    if (marker !== undefined && carriesMarker(pid, marker)) killStillRunning(descendantsOf(pid));
  for (const pid of liveGroups.keys()) killGroup(pid);
  killMarkedProcesses([...liveGroups.values()].filter((marker): marker is string => marker !== undefined));
  liveGroups.clear();
}

/** A process as `/proc` shows it: its parent, its arguments, its working folder, its call marker. */
interface ProcessView {
  ppid: number;
  argv: string[];
  cwd: string | undefined;
  marker: string | undefined;
}

function viewOf(pid: number): ProcessView | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ")"
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    if (argv.at(-1) === "") argv.pop();
    const prefix = `${CALL_MARKER_VARIABLE}=`;
    const entry = readFileSync(`/proc/${pid}/environ`, "utf8")
      .split("\0")
      .find((line) => line.startsWith(prefix));
    let cwd: string | undefined;
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      cwd = undefined;
    }
    return { ppid, argv, cwd, marker: entry?.slice(prefix.length) };
  } catch {
    return undefined; // gone, or another user's
  }
}

/**
 * Stops what is left of a `bash` call whose agent died (SIGKILL, a crash) while it ran, and says
 * how many processes that was. Found in `/proc` (Linux only; 0 elsewhere): a command's processes
 * carry its call marker, and when the agent dies the command's first process is handed to init
 * (or another reaper), so its nearest ancestor without the marker is no longer a Node process.
 * The command is the call's when that first process still runs `shell -c command`, or ran a
 * simple command in its place (`bash -c "sleep 30"` becomes `sleep 30`), in `cwd`. Every process
 * carrying its marker gets SIGKILL, as `killMarkedProcesses` does.
 */
export function stopOrphanedCommand(shell: string, command: string, cwd: string): number {
  if (process.platform !== "linux") return 0;
  const views = new Map<number, ProcessView>();
  for (const name of readdirSafe("/proc")) {
    const first = name.charCodeAt(0);
    if (first < 48 || first > 57) continue;
    const view = viewOf(Number(name));
    if (view !== undefined && view.marker !== undefined) views.set(Number(name), view);
  }
  const markers = new Set<string>();
  for (const view of views.values()) {
    // the first process of its command: its parent does not carry the same marker
    const parent = views.get(view.ppid);
    if (parent !== undefined && parent.marker === view.marker) continue;
    if (isNodeProcess(view.ppid)) continue; // its agent is alive
    const runsIt =
      (view.argv.length === 3 && view.argv[0] === shell && view.argv[1] === "-c" && view.argv[2] === command) ||
      view.argv.join(" ") === command.trim();
    if (runsIt && view.cwd === cwd) markers.add(view.marker!);
  }
  return markers.size === 0 ? 0 : killMarkedProcesses(markers);
}

function isNodeProcess(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "node";
  } catch {
    return false;
  }
}

/** A process as it was seen: its pid and its start time (clock ticks after boot), which tell it from a later one with the pid. */
export interface ProcessStamp {
  pid: number;
  start: string;
}

/**
 * The processes that descend from `pid` now (its children, theirs, …), by the parent links in
 * `/proc`. It finds a process that left the group and the marker for as long as its ancestors
 * run; once one of them ends, its descendants are adopted by init and found no more. Empty off
 * Linux. Synchronous, so it also runs in a process `exit` handler.
 */
export function descendantsOf(pid: number): ProcessStamp[] {
  if (process.platform !== "linux") return [];
  const children = new Map<number, ProcessStamp[]>();
  for (const name of readdirSafe("/proc")) {
    if (!/^[0-9]+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // state ppid pgrp … starttime (20th)
    const ppid = Number(fields[1]);
    const list = children.get(ppid) ?? [];
    list.push({ pid: Number(name), start: fields[19] ?? "" });
    children.set(ppid, list);
  }
  const found: ProcessStamp[] = [];
  for (let queue = [pid]; queue.length > 0; ) {
    for (const child of children.get(queue.pop()!) ?? []) {
      found.push(child);
      queue.push(child.pid);
    }
  }
  return found;
}

/** Whether the process `pid` was started with `PI_COURSE_CALL=<marker>` in its environment. */
function carriesMarker(pid: number, marker: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`).includes(Buffer.from(`${CALL_MARKER_VARIABLE}=${marker}\0`));
  } catch {
    return false; // gone, or another user's
  }
}

/** SIGKILL to each of `processes` that still runs as the same process (same start time); returns how many. */
export function killStillRunning(processes: Iterable<ProcessStamp>): number {
  let killed = 0;
  for (const { pid, start } of processes) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue; // gone
    }
    if (stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] !== start) continue; // its pid was taken again
    try {
      process.kill(pid, "SIGKILL");
      killed++;
    } catch {
      // ESRCH: it ended meanwhile.
    }
  }
  return killed;
}

function readdirSafe(folder: string): string[] {
  try {
    return readdirSync(folder);
  } catch {
    return [];
  }
}
