/**
 * A worker: one process serving the `AgentRun` and `EvalRun` workflows to the engine over HTTP/2 (h2c).
 *
 * The engine pushes work to a deployment address; several workers behind one address (a load
 * balancer, or `startProxy` here) share the runs, and a run whose worker died is retried by the
 * engine through that address, so it lands on a worker that is alive.
 */
import "./node20.js";
import http2 from "node:http2";
import * as restate from "@restatedev/restate-sdk";
import { agentRunWorkflow, type RunSetups } from "./agent-run.js";
import { evalRunWorkflow } from "./eval-run.js";

export interface WorkerOptions {
  /** The setups of agent runs (default none: this worker takes eval cases only). */
  setups?: RunSetups;
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
  const handler = restate.createEndpointHandler({
    services: [agentRunWorkflow(options.setups ?? {}), evalRunWorkflow({ concurrency: options.cases ?? 2 })],
    bidirectional: true,
  });
  const server = http2.createServer(handler);
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
    url: `http://${host}:${port}`,
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
