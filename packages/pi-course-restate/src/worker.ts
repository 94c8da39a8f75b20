/**
 * A worker: one process serving the `AgentRun` and `EvalRun` workflows to the engine over HTTP/2 (h2c).
 *
 * The engine pushes work to a deployment address; several workers behind one address (a load
 * balancer, or `startProxy` here) share the runs, and a run whose worker died is retried by the
 * engine through that address, so it lands on a worker that is alive.
 *
 * It trusts no network: every request but its version must be signed by the engine
 * (`identityKeys`, Restate's request identity; anything else is answered 401), and an eval case is
 * run only from inside the suite folders it was given at start (`suites`). Its version answer
 * carries a proof made with the workers' secret (`workerSecret`, `worker-proof.ts`): the engine's
 * proxy sends runs only to a worker that proves it, so a listener someone else put on this
 * worker's port after it died gets none.
 */
import "./node20.js";
import http2 from "node:http2";
import * as restate from "@restatedev/restate-sdk";
import { agentRunWorkflow, type RetryOptions, type RunSetups } from "./agent-run.js";
import { evalRunWorkflow } from "./eval-run.js";
import type { WorkerCredential } from "./identity.js";
import { listen } from "./listener.js";
import { CHALLENGE_HEADER, endpoint, isChallenge, isSignedPath, VERSION_PATH, workerProof } from "./worker-proof.js";

/**
 * `identityKeys`: the engine's public keys (its `identity-keys` file): only requests signed with
 * one of them are served. `workerSecret`: what it proves itself to the engine's proxy with. Both
 * required: a worker runs code for whoever reaches it, and runs carry their input to whoever
 * listens where the proxy sends them.
 */
export interface WorkerOptions extends WorkerCredential {
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
  if (!/^workersecretv1_/.test(options.workerSecret ?? "")) {
    throw new Error(
      "startWorker: no workers' secret; give the engine's (the workersecretv1_ entry of its `identity-keys`)",
    );
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
  const version = options.version ?? "unversioned";
  const server = http2.createServer((request, response) => {
    if (request.url === VERSION_PATH && request.method === "GET") {
      // answered to anyone: the connection stays under the listener's cap (the proxy's session waits here for runs)
      listening.answered(request.socket);
      const challenge = request.headers[CHALLENGE_HEADER];
      if (!isChallenge(challenge)) {
        response.writeHead(400, { "content-type": "text/plain" });
        response.end(`ask with a ${CHALLENGE_HEADER} header (32 random bytes, base64url)\n`);
        return;
      }
      const socket = request.stream.session?.socket;
      const where = endpoint(socket?.localAddress, socket?.localPort);
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ version, proof: workerProof(options.workerSecret, challenge, where, version) }));
      return;
    }
    // off the listener's guard only once a request got past the engine's signature (the SDK answers
    // the head of a signed invocation or discovery 200; an unsigned one 401, /health 200 to anyone)
    const signable = isSignedPath(request.url ?? "");
    const writeHead = response.writeHead.bind(response) as (status: number, ...rest: unknown[]) => typeof response;
    response.writeHead = ((status: number, ...rest: unknown[]) => {
      if (signable && status < 300) listening.started(request.socket);
      else listening.answered(request.socket);
      return writeHead(status, ...rest);
    }) as typeof response.writeHead;
    handler(request, response);
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  const listening = await listen(server, {
    ...(options.port !== undefined && { port: options.port }),
    ...(options.host !== undefined && { host: options.host }),
  });
  return {
    url: listening.url,
    port: listening.port,
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
