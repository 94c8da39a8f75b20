/**
 * A worker: one process serving the `AgentRun` and `EvalRun` workflows to the engine over HTTP/2 (h2c).
 *
 * The engine pushes work to a deployment address; several workers behind one address (a load
 * balancer, or `startProxy` here) share the runs, and a run whose worker died is retried by the
 * engine through that address, so it lands on a worker that is alive.
 *
 * It trusts no network: every request but `/health` and its version must be signed by the engine
 * (`identityKeys`, Restate's request identity; anything else is answered 401), and an eval case is
 * run only from inside the suite folders it was given at start (`suites`).
 */
import "./node20.js";
import http2 from "node:http2";
import * as restate from "@restatedev/restate-sdk";
import { agentRunWorkflow, type RetryOptions, type RunSetups } from "./agent-run.js";
import { evalRunWorkflow } from "./eval-run.js";
import { VERSION_PATH } from "./proxy.js";

export interface WorkerOptions {
  /**
   * The engine's public keys (`publickeyv1_…`, its `identity-keys` file): only requests signed
   * with one of them are served. Required: a worker runs code for whoever reaches it.
   */
  identityKeys: readonly string[];
  /** The setups of agent runs (default none: this worker takes eval cases only). */
  setups?: RunSetups;
  /** The suite folders whose cases this worker runs (default none: it refuses every eval case). */
  suites?: readonly string[];
  /** Which code this is; runs stay on the version they started with (default "unversioned"). */
  version?: string;
  /** The engine's retry of a run whose worker is gone (`RETRY_POLICY` by default). */
  retry?: RetryOptions;
  /** Eval cases at once in this worker (default 2). */
  cases?: number;
  /** Default 0: any free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
}

export interface Worker {
  url: string;
  port: number;
  /**
   * Takes no new connections, asks every open one to finish its streams (an HTTP/2 GOAWAY: the
   * proxy and the engine keep sessions open, so closing the server alone would wait for ever), and
   * cuts those still open after `graceMs` (default 5 s; the engine retries their runs elsewhere).
   */
  close(graceMs?: number): Promise<void>;
}

/** Starts a worker and resolves once it listens. */
export async function startWorker(options: WorkerOptions): Promise<Worker> {
  if (options.identityKeys.length === 0) {
    throw new Error("startWorker: no identity keys; give the engine's (its --dir holds them in `identity-keys`)");
  }
  const retry = options.retry === undefined ? {} : { retry: options.retry };
  const handler = restate.createEndpointHandler({
    services: [
      agentRunWorkflow(options.setups ?? {}, retry),
      await evalRunWorkflow({ concurrency: options.cases ?? 2, suites: options.suites ?? [], ...retry }),
    ],
    identityKeys: [...options.identityKeys],
    bidirectional: true,
  });
  const version = JSON.stringify({ version: options.version ?? "unversioned" });
  const server = http2.createServer((request, response) => {
    if (request.url === VERSION_PATH && request.method === "GET") {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(version);
      return;
    }
    handler(request, response);
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    port,
    close: (graceMs = 5000) =>
      new Promise<void>((resolve) => {
        const cut = setTimeout(() => {
          for (const session of sessions) session.destroy();
        }, graceMs);
        server.close(() => {
          clearTimeout(cut);
          resolve();
        });
        for (const session of sessions) session.close();
      }),
  };
}
