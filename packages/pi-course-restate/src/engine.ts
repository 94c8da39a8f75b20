/**
 * The engine as one function: the Restate server (Unix sockets only), the gate in front of it
 * (the one way in, with the owner's credential), and the deployment proxy in front of the workers.
 *
 * Its folder (`dir`, 0700) holds everything that makes it the same engine across restarts:
 * Restate's data, the request identity (`identity-keys` is what workers are given), the
 * credential (`client.json`, 0600: the gate's URL and token, what every client reads) and its
 * ports (`engine.json`). The folder is refused when another user could read or swap it, and is
 * looked at again before a restart and once a second (`folder-guard.ts`): if it was swapped, the
 * engine stops everything and `failed` says so. A restarted engine listens where it listened
 * before, so its deployments stay valid and runs in flight go on as soon as it is back; a port
 * someone else took is an error that says so.
 *
 * It keeps itself running: a Restate server that dies is started again on the same data (runs go
 * on from their journals); one that keeps dying (`maxRestarts` within a minute) fails the engine
 * (`failed` resolves) with what to do.
 *
 * Versions: every `watchMs` it asks the workers which code they run (`proxy.versions`). A version
 * it has not seen is registered as a new deployment, `<proxy>/v/<version>`, beside the others: new
 * runs go to it, while runs in flight stay on the version they started on (Restate pins a run to
 * its deployment). An older version with no run left is retired (its deployment removed); until
 * then `engineVersions` says it is draining.
 */
import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { CLIENT_FILE, type EngineConnection, engineVersions } from "./engine-client.js";
import { guardFolder } from "./folder-guard.js";
import { type Gate, startGate } from "./gate.js";
import { engineIdentity, type WorkerCredential } from "./identity.js";
import { type Proxy, startProxy } from "./proxy.js";
import { type RestateServer, restateSockets, startRestateServer, unboundServerWarning } from "./restate-server.js";

export interface EngineOptions {
  /** The engine's folder (made 0700). */
  dir: string;
  /** The workers' URLs (`http://host:port`), of every version; those not answering are skipped. */
  workers: readonly string[];
  /** Where the gate listens (default 127.0.0.1). */
  host?: string;
  /** The gate's port (default: the one it had, else any free one). */
  port?: number;
  /** Where the proxy listens, for the Restate server (default 127.0.0.1). */
  proxyHost?: string;
  /** The proxy's port (default: the one it had, else any free one). */
  proxyPort?: number;
  /** How often the workers' versions are looked at (default 1000 ms). */
  watchMs?: number;
  /** Restarts of the Restate server allowed within a minute before the engine gives up (default 5). */
  maxRestarts?: number;
  /** Where the engine says what it does (default: stderr). */
  log?: (line: string) => void;
}

export interface Engine extends EngineConnection {
  dir: string;
  /** The credential file clients read (`client.json`). */
  connectionFile: string;
  /** The file workers are given (`identity-keys`: the engine's public key and the workers' secret). */
  identityKeysFile: string;
  publicKey: string;
  /** What a worker started from this process is given (`startWorker`, `spawnWorker`): that file's content. */
  workerCredential: WorkerCredential;
  /** The deployment proxy's URL (what the Restate server calls). */
  proxyUrl: string;
  /** The Restate server running now (a new one after a restart). */
  server(): RestateServer;
  /** Replaces the workers' URLs (a rollout onto other ports or hosts). */
  setWorkers(urls: readonly string[]): void;
  /** Resolves when the engine gave up (the Restate server would not stay up, or its folder was swapped), with what to do; by then its gate, proxy and server are stopped. */
  failed: Promise<Error>;
  /** Stops the version watcher, the gate, the proxy and the server. */
  stop(): Promise<void>;
}

interface Saved {
  port?: number;
  proxyPort?: number;
}

/** Starts the engine in `options.dir` and resolves once its gate and proxy listen and Restate answers. */
export async function startEngine(options: EngineOptions): Promise<Engine> {
  const dir = path.resolve(options.dir);
  const log = options.log ?? ((line: string) => process.stderr.write(`engine: ${line}\n`));
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const folder = await guardFolder(dir);
  await chmod(dir, 0o700);
  const stateFile = path.join(dir, "engine.json");
  const saved = JSON.parse(await readFile(stateFile, "utf8").catch(() => "{}")) as Saved;
  const connectionFile = path.join(dir, CLIENT_FILE);
  const old = JSON.parse(await readFile(connectionFile, "utf8").catch(() => "{}")) as Partial<EngineConnection>;
  const token = old.token ?? randomBytes(32).toString("base64url");
  const identity = await engineIdentity(dir);

  const told = new Set<string>();
  const once = (line: string) => {
    if (!told.has(line)) log(line);
    told.add(line);
  };
  // The proxy and the gate take their ports before the Restate server starts, and give them up
  // only after it ended (`stopAll`): a server that runs while no proxy holds the proxy's port
  // sends runs in flight (their journals, and a request identity any worker takes for 60 s) to
  // whoever listens there. So a port someone else took stops the start before a server runs.
  const sockets = restateSockets(dir);
  const listen = async <T>(what: string, port: number | undefined, start: (port: number) => Promise<T>) => {
    try {
      return await start(port ?? 0);
    } catch (error) {
      const code = (error as { code?: string }).code;
      throw new Error(
        code === "EADDRINUSE"
          ? `the engine's ${what} port ${port} is taken by another program; it is the port this engine had ` +
              `(its deployments name it), so free it, or give --${what === "gate" ? "port" : "proxy-port"} to move ` +
              "(then runs in flight on the old address are lost). No Restate server was started."
          : `the engine's ${what} did not start: ${(error as Error).message}`,
      );
    }
  };
  const proxy: Proxy = await listen("proxy", options.proxyPort ?? saved.proxyPort, (port) =>
    startProxy({
      workers: options.workers,
      workerSecret: identity.workerSecret,
      port,
      ...(options.proxyHost !== undefined && { host: options.proxyHost }),
      onRefused: (url, why) =>
        once(
          `the listener at ${url} did not prove it is a worker of this engine (${why}); it gets no run. ` +
            "If it is one, give it this engine's identity-keys; if not, another program took a worker's port.",
        ),
    }),
  );
  const gate: Gate = await listen("gate", options.port ?? saved.port, (port) =>
    startGate({
      token,
      ...sockets,
      port,
      ...(options.host !== undefined && { host: options.host }),
    }),
  ).catch(async (error: unknown) => {
    await proxy.close();
    throw error;
  });
  let server = await startRestateServer({ dir, identityKeyFile: identity.privateKeyFile }).catch(
    async (error: unknown) => {
      await gate.close();
      await proxy.close();
      throw error;
    },
  );
  const unbound = unboundServerWarning();
  if (unbound !== undefined) log(unbound);
  await writeFile(stateFile, `${JSON.stringify({ port: gate.port, proxyPort: proxy.port })}\n`, { mode: 0o600 });
  await writeFile(connectionFile, `${JSON.stringify({ url: gate.url, token }, null, 2)}\n`, { mode: 0o600 });
  await chmod(connectionFile, 0o600);
  const connection: EngineConnection = { url: gate.url, token };

  // the server kept running
  let stopping = false;
  let failedWith!: (error: Error) => void;
  const failed = new Promise<Error>((resolve) => {
    failedWith = resolve;
  });
  let givingUp = false;
  /** Stops everything, then says why through `failed` (once): when `failed` resolves, nothing of the engine runs. */
  const giveUp = async (error: Error) => {
    if (givingUp) return;
    givingUp = true;
    await stopAll().catch(() => {});
    failedWith(error);
  };
  const restarts: number[] = [];
  const supervise = (current: RestateServer) => {
    void current.exited.then(async ({ code, signal }) => {
      if (stopping) return;
      const now = Date.now();
      restarts.push(now);
      while (restarts.length > 0 && restarts[0]! < now - 60_000) restarts.shift();
      const why = `the Restate server exited (${signal ?? `code ${code}`})`;
      if (restarts.length > (options.maxRestarts ?? 5)) {
        await giveUp(
          new Error(
            `${why} ${restarts.length} times within a minute: ${current.stderr().trim() || "(it said nothing)"}\n` +
              `Its data is in ${path.join(dir, "data")}; fix what it says above (disk space, permissions), ` +
              `then start \`pi-course-restate engine --dir ${dir}\` again: runs in flight go on from their journals.`,
          ),
        );
        return;
      }
      log(`${why}; starting it again on the same data`);
      try {
        await folder.check();
        server = await startRestateServer({ dir, identityKeyFile: identity.privateKeyFile });
        log("the Restate server is back; runs in flight go on");
        supervise(server);
      } catch (error) {
        if (stopping) return;
        await giveUp(
          new Error(
            `${why} and does not start again: ${(error as Error).message}\n` +
              `Its data is in ${path.join(dir, "data")}; fix what it says, then start \`pi-course-restate engine --dir ${dir}\` again.`,
          ),
        );
      }
    });
  };
  supervise(server);

  let timer: NodeJS.Timeout | undefined;
  let folderTimer: NodeJS.Timeout | undefined;
  let stopped: Promise<void> | undefined;
  /** Stops the gate, the server, then the proxy (once). */
  const stopAll = () => {
    stopping = true;
    clearInterval(timer);
    clearInterval(folderTimer);
    // the proxy last: its port stays the engine's until no server can send a run there
    stopped ??= (async () => {
      await gate.close();
      await server.stop();
      await proxy.close();
    })();
    return stopped;
  };

  // versions: register new ones beside the old, retire drained ones. A retired version whose
  // workers are still up is not registered again (it would take new runs from the newer code);
  // once none of its workers answered, seeing it again is a rollback, and it is registered.
  const retiredFile = path.join(dir, "retired.json");
  const retired = new Map<string, { gone: boolean }>(
    Object.entries(
      JSON.parse(await readFile(retiredFile, "utf8").catch(() => "{}")) as Record<string, { gone: boolean }>,
    ),
  );
  const saveRetired = async () =>
    folder
      .check()
      .then(() => writeFile(retiredFile, `${JSON.stringify(Object.fromEntries(retired))}\n`, { mode: 0o600 }));
  const watch = async () => {
    const live = await proxy.versions();
    const known = await engineVersions(connection);
    for (const [version, state] of retired) {
      if (!live.has(version) && !state.gone) {
        state.gone = true;
        await saveRetired();
      }
    }
    for (const version of live.keys()) {
      if (known.some((v) => v.version === version)) continue;
      const wasRetired = retired.get(version);
      if (wasRetired !== undefined && !wasRetired.gone) {
        once(`version ${version} is retired but workers of it still answer; stop them (it takes no new runs)`);
        continue;
      }
      const uri = versionUri(proxy.url, version);
      try {
        const id = await server.register(uri);
        if (retired.delete(version)) await saveRetired();
        log(`version ${version} registered (deployment ${id}): new runs go to it`);
        return; // one at a time: the next look sees it as the latest
      } catch (error) {
        once(`version ${version} could not be registered: ${(error as Error).message}`);
      }
    }
    for (const v of known) {
      if (v.state !== "drained") continue;
      const removed = await server.admin("DELETE", `/deployments/${encodeURIComponent(v.deploymentId)}?force=true`);
      if (removed.status < 300) {
        retired.set(v.version, { gone: false });
        await saveRetired();
        log(`version ${v.version} retired (deployment ${v.deploymentId}): its runs are done`);
      } else once(`version ${v.version} could not be retired (${removed.status}): ${removed.text}`);
    }
  };
  let watching = Promise.resolve();
  timer = setInterval(() => {
    watching = watching.then(watch).catch((error: unknown) => {
      if (!stopping) once(`looking at the workers' versions failed: ${(error as Error).message}`);
    });
  }, options.watchMs ?? 1000);
  // the folder, looked at apart from the workers (a look at them may wait on one for seconds)
  folderTimer = setInterval(() => {
    folder.check().catch(async (error: unknown) => {
      if (stopping) return;
      await giveUp(error as Error);
    });
  }, options.watchMs ?? 1000);
  watching = watch().catch((error: unknown) =>
    once(`looking at the workers' versions failed: ${(error as Error).message}`),
  );

  return {
    ...connection,
    dir,
    connectionFile,
    identityKeysFile: identity.publicKeyFile,
    publicKey: identity.publicKey,
    workerCredential: { identityKeys: [identity.publicKey], workerSecret: identity.workerSecret },
    proxyUrl: proxy.url,
    server: () => server,
    setWorkers: (urls) => proxy.setWorkers(urls),
    failed,
    async stop() {
      stopping = true;
      clearInterval(timer);
      clearInterval(folderTimer);
      // a look at the workers under way ends by itself (each of its requests is bounded); not waited on for long
      await Promise.race([watching, new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
      await stopAll();
    },
  };
}

/** The deployment URI of `version` behind a proxy at `proxyUrl`. */
export function versionUri(proxyUrl: string, version: string): string {
  return `${proxyUrl}/v/${encodeURIComponent(version)}`;
}
