/**
 * The engine, started from its npm package (`@restatedev/restate-server`, whose platform package
 * holds the prebuilt binary): one Restate node on 127.0.0.1 with its data in a folder of its own.
 *
 * `startRestateServer` picks free ports, writes a config file, starts the binary, and resolves
 * once both the admin API and the ingress answer. `register` tells the engine where the workers
 * are (one deployment address: a proxy or load balancer in front of them). `stop` ends it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import net from "node:net";
import path from "node:path";

export interface RestateServer {
  /** Where runs are submitted (`http://127.0.0.1:<port>`). */
  ingressUrl: string;
  /** The admin API (deployments, invocations). */
  adminUrl: string;
  process: ChildProcess;
  /** Registers (or re-registers) the deployment at `url` and waits until the engine knows it. */
  register(url: string): Promise<void>;
  /** Ends the server (SIGTERM, then SIGKILL after `graceMs`, default 2000) and waits for its exit. */
  stop(graceMs?: number): Promise<void>;
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

/** Starts a Restate server with its data in `dir` (created if missing). */
export async function startRestateServer(options: {
  dir: string;
  timeoutMs?: number;
  /** Where the ingress and the admin API listen (default 127.0.0.1; the node's own port stays on 127.0.0.1). */
  bind?: string;
}): Promise<RestateServer> {
  await mkdir(options.dir, { recursive: true });
  const bind = options.bind ?? "127.0.0.1";
  const [fabric, ingress, admin] = [await freePort(), await freePort(bind), await freePort(bind)];
  const config = path.join(options.dir, "restate.toml");
  await writeFile(
    config,
    [
      `base-dir = ${JSON.stringify(path.join(options.dir, "data"))}`,
      `bind-address = "127.0.0.1:${fabric}"`,
      `advertised-address = "http://127.0.0.1:${fabric}"`,
      "default-num-partitions = 4",
      "disable-telemetry = true",
      // a node for tests and small deployments: RocksDB's default budget is 2 GiB
      'rocksdb-total-memory-size = "256 MiB"',
      // the version check finds no network here; it says so at ERROR level
      'log-filter = "warn,octocrab=off"',
      "[ingress]",
      `bind-address = "${hostPort(bind, ingress)}"`,
      "[admin]",
      `bind-address = "${hostPort(bind, admin)}"`,
      "disable-web-ui = true",
      "",
    ].join("\n"),
  );
  const child = spawn(restateServerBinary(), ["--config-file", config, "--listen-mode", "tcp", "--no-logo"], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, DO_NOT_TRACK: "1" },
  });
  let stderr = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const ingressUrl = `http://${hostPort(bind, ingress)}`;
  const adminUrl = `http://${hostPort(bind, admin)}`;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async (graceMs = 2000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`the Restate server exited while starting (${child.exitCode ?? child.signalCode}): ${stderr}`);
      }
      if ((await ok(`${adminUrl}/health`)) && (await ok(`${ingressUrl}/restate/health`))) break;
      if (Date.now() > deadline) throw new Error(`the Restate server did not answer within its start time: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } catch (error) {
    await stop(0);
    throw error;
  }
  return {
    ingressUrl,
    adminUrl,
    process: child,
    stop,
    async register(url: string) {
      const response = await fetch(`${adminUrl}/deployments`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ uri: url, force: true }),
      });
      if (!response.ok) {
        throw new Error(`Restate refused the deployment ${url} (${response.status}): ${await response.text()}`);
      }
    },
  };
}

async function ok(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(1000) });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

/** `host:port`, an IPv6 host in brackets. */
function hostPort(host: string, port: number): string {
  return net.isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
}

/** A port that was free a moment ago on `host` (default 127.0.0.1). */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
