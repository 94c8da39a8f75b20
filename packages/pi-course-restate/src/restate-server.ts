/**
 * The Restate server, started from its npm package (`@restatedev/restate-server`, whose platform
 * package holds the prebuilt binary): one node with its data in a folder of its own.
 *
 * It listens on Unix sockets only (`<dir>/data/engine/{ingress,admin,fabric}.sock`), never on TCP:
 * Restate has no authentication of its own on ingress and admin, and a loopback port is open to
 * every local user, while a socket in a 0700 folder is reachable by its owner alone. The engine's
 * gate (`gate.ts`) is the only way in from outside, with the owner's credential.
 *
 * It signs every request to a worker with the engine's request identity (`identity.ts`), and its
 * default retry policy never gives up (`max-attempts = "unlimited"`): a run whose workers are all
 * gone waits for one, however long, with the capped backoff its workflow advertises.
 *
 * On Linux the server dies with the process that started it: it is started through util-linux's
 * `setpriv --pdeathsig SIGKILL` (the kernel kills it when the engine is gone, even by SIGKILL; not
 * SIGTERM, as a server shutting down still retries the runs whose connections the engine's death
 * cut, to a proxy port that anyone may take by then). Any server of the same folder still running
 * when a new one starts (`setpriv` missing, or an engine SIGKILLed before the signal was set) is
 * found by its command line and ended first.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import http from "node:http";
import { createRequire } from "node:module";
import net from "node:net";
import path from "node:path";

export interface RestateServer {
  /** The server's folder (0700). */
  dir: string;
  /** Restate's ingress, a Unix socket only the owner reaches. */
  ingressSocket: string;
  /** Restate's admin API, a Unix socket only the owner reaches. */
  adminSocket: string;
  process: ChildProcess;
  /** Resolves when the server process exits, for whatever reason. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last lines the server wrote to stderr. */
  stderr(): string;
  /** A request to the admin API (`path` as in Restate's docs: `/deployments`, `/query`…). */
  admin(method: string, path: string, body?: unknown): Promise<SocketResponse>;
  /** Registers the deployment at `url` (not in place: a new address is a new deployment) and resolves with its id. */
  register(url: string): Promise<string>;
  /** Ends the server (SIGTERM, then SIGKILL after `graceMs`, default 2000) and waits for its exit. */
  stop(graceMs?: number): Promise<void>;
}

export interface SocketResponse {
  status: number;
  text: string;
}

/** The path of the server binary for this platform, from the npm package. */
export function restateServerBinary(): string {
  const require = createRequire(import.meta.url);
  const name = `@restatedev/restate-server-${process.platform}-${process.arch}/bin/restate-server`;
  try {
    return require.resolve(name);
  } catch {
    throw new Error(
      `The Restate server binary ${name} is not installed; the engine needs it (workers do not). ` +
        "Install it beside this package: npm install @restatedev/restate-server@1.7.12",
    );
  }
}

/** util-linux's `setpriv`, which starts a program that dies with its parent (Linux only). */
const PDEATHSIG =
  process.platform === "linux" ? ["/usr/bin/setpriv", "/bin/setpriv"].find((file) => existsSync(file)) : undefined;

/**
 * What to know when the server cannot be tied to its engine here (no `setpriv`, or not Linux):
 * a line for the engine's log, or undefined when it is tied.
 */
export function unboundServerWarning(): string | undefined {
  if (PDEATHSIG !== undefined) return undefined;
  return (
    "the Restate server cannot be made to die with this engine here (" +
    (process.platform === "linux"
      ? "util-linux's setpriv is not installed: apt-get install util-linux, apk add setpriv, or dnf install util-linux"
      : `no parent-death signal on ${process.platform}`) +
    "); if the engine is SIGKILLed, its server keeps running, and retrying runs in flight at the proxy's port, " +
    "which any local user may take meanwhile, until the engine starts again. Stop the engine with Ctrl-C or SIGTERM."
  );
}

/** The longest path a Unix socket may have on Linux (sun_path, 108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107;

/**
 * Where the server of `dir` listens (the same paths across restarts, so the gate is given them
 * before the server starts). Throws when they would be too long for a Unix socket.
 */
export function restateSockets(dir: string): { ingressSocket: string; adminSocket: string } {
  const node = path.join(path.resolve(dir), "data", "engine");
  if (Buffer.byteLength(path.join(node, "fabric.sock")) > MAX_SOCKET_PATH) {
    throw new Error(
      `${dir} is too deep for the engine's Unix sockets (${node}/fabric.sock is over ${MAX_SOCKET_PATH} bytes); ` +
        "give the engine a shorter --dir.",
    );
  }
  return { ingressSocket: path.join(node, "ingress.sock"), adminSocket: path.join(node, "admin.sock") };
}

/**
 * Starts a Restate server with its data in `dir` (created 0700 if missing), signing requests to
 * workers with the private key in `identityKeyFile`.
 */
export async function startRestateServer(options: {
  dir: string;
  identityKeyFile: string;
  timeoutMs?: number;
}): Promise<RestateServer> {
  const dir = path.resolve(options.dir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const { ingressSocket, adminSocket } = restateSockets(dir);
  const config = path.join(dir, "restate.toml");
  await writeFile(
    config,
    [
      `base-dir = ${JSON.stringify(path.join(dir, "data"))}`,
      'node-name = "engine"',
      "default-num-partitions = 4",
      "disable-telemetry = true",
      // a node for tests and small deployments: RocksDB's default budget is 2 GiB
      'rocksdb-total-memory-size = "256 MiB"',
      // the version check finds no network here; it says so at ERROR level
      'log-filter = "warn,octocrab=off"',
      // what a workflow does not say: never pause for good (ours advertise a capped backoff)
      "[default-retry-policy]",
      'max-attempts = "unlimited"',
      'max-interval = "2s"',
      "[worker.invoker]",
      `request-identity-private-key-pem-file = ${JSON.stringify(options.identityKeyFile)}`,
      "[admin]",
      "disable-web-ui = true",
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
  await endLeftover(config);
  const command = [restateServerBinary(), "--config-file", config, "--listen-mode", "unix", "--no-logo"];
  // setpriv sets the signal, then execs the server: the same pid, the same command line
  const withParent = PDEATHSIG === undefined ? command : [PDEATHSIG, "--pdeathsig", "SIGKILL", "--", ...command];
  // its data and sockets the owner's alone whatever this process's umask (under umask 000 they were
  // 0777, the folder's 0700 the one barrier): a child starts with the umask of the moment it forks
  const umask = process.umask(0o077);
  let child: ChildProcess;
  try {
    child = spawn(withParent[0]!, withParent.slice(1), {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, DO_NOT_TRACK: "1" },
    });
  } finally {
    process.umask(umask);
  }
  if (child.pid !== undefined) await writeFile(path.join(dir, "restate.pid"), `${child.pid}\n`, { mode: 0o600 });
  let stderr = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const stop = async (graceMs = 2000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
  };
  const admin = (method: string, route: string, body?: unknown) => socketRequest(adminSocket, method, route, body);
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`the Restate server exited while starting (${child.exitCode ?? child.signalCode}): ${stderr}`);
      }
      // healthy, and its partitions are led (until then a query of runs fails)
      if (
        (await healthy(adminSocket, "/health")) &&
        (await healthy(ingressSocket, "/restate/health")) &&
        (await admin("POST", "/query", { query: "SELECT id FROM sys_invocation LIMIT 1" }).catch(() => undefined))
          ?.status === 200
      )
        break;
      if (Date.now() > deadline) throw new Error(`the Restate server did not answer within its start time: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } catch (error) {
    await stop(0);
    throw error;
  }
  return {
    dir,
    ingressSocket,
    adminSocket,
    process: child,
    exited,
    stderr: () => stderr,
    stop,
    admin,
    async register(url: string) {
      const response = await admin("POST", "/deployments", { uri: url });
      if (response.status >= 300) {
        throw new Error(`Restate refused the deployment ${url} (${response.status}): ${response.text}`);
      }
      return (JSON.parse(response.text) as { id: string }).id;
    },
  };
}

/**
 * Ends every server left running on `dir`: any process of this user whose command line says
 * `--config-file <config>` (`/proc`), whether or not a pid file names it. An engine SIGKILLed
 * between starting its server and writing `restate.pid`, or before `setpriv` set the
 * parent-death signal (the signal then follows the new parent, which never dies), leaves one that
 * no pid file names; it would hold the folder's sockets and answer for the new server. Another
 * user's process is never taken for ours, whatever its command line says (a recycled pid).
 */
async function endLeftover(config: string): Promise<void> {
  const left = serversOf(config);
  for (const pid of left) process.kill(pid, "SIGKILL"); // its log is durable: the new server picks up where it was
  while (left.some((pid) => serversOf(config).includes(pid))) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** The pids of this user's processes started with `--config-file <config>` (none where there is no `/proc`). */
function serversOf(config: string): number[] {
  const uid = process.getuid?.();
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  return pids.map(Number).filter((pid) => {
    try {
      // its real user (`/proc/PID`'s owner is root for a process that is not dumpable)
      const owner = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
      if (pid === process.pid || owner !== uid) return false;
      const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      return args.some((arg, i) => arg === "--config-file" && args[i + 1] === config);
    } catch {
      return false; // ended meanwhile
    }
  });
}

/** One HTTP/1.1 request over a Unix socket; resolves with the status and the whole body. */
export function socketRequest(
  socketPath: string,
  method: string,
  route: string,
  body?: unknown,
  timeoutMs = 10_000,
): Promise<SocketResponse> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const request = http.request(
      {
        socketPath,
        method,
        path: route,
        headers: {
          host: "localhost",
          ...(payload !== undefined && { "content-type": "application/json" }),
          accept: "application/json",
        },
        timeout: timeoutMs,
      },
      (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          text += chunk;
        });
        response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
        response.on("error", reject);
      },
    );
    request.on("timeout", () => request.destroy(new Error(`${method} ${route} on ${socketPath}: no answer in time`)));
    request.on("error", reject);
    request.end(payload);
  });
}

async function healthy(socketPath: string, route: string): Promise<boolean> {
  try {
    return (await socketRequest(socketPath, "GET", route, undefined, 1000)).status === 200;
  } catch {
    return false;
  }
}

/**
 * A port that is free now on `host` (default 127.0.0.1), for a listener started a moment later.
 * It is chosen at random below the system's ephemeral range (Linux: `ip_local_port_range`, from
 * 32768): a port from that range (what `listen(0)` gives) can be taken in between as the local
 * port of any outgoing connection, which a busy machine makes all the time.
 */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  const lowest = 10_000;
  const below = ephemeralStart();
  if (below - lowest >= 1_000) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const port = lowest + Math.floor(Math.random() * (below - lowest));
      if ((await listenOnce(port, host).catch(() => undefined)) !== undefined) return port;
    }
  }
  return listenOnce(0, host);
}

/** The first port of the system's ephemeral range (32768, Linux's default, when it cannot be read). */
function ephemeralStart(): number {
  try {
    const first = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 0 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

/** Listens on `port` of `host` and closes again: the port it had (rejects when it is taken). */
function listenOnce(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(port, host, () => {
      const address = server.address();
      const got = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(got));
    });
  });
}
