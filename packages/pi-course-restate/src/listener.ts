/**
 * What every TCP listener of the package shares (the gate, the proxy, a worker): listening on a
 * host and port, and the guard against connections that never get to a request.
 *
 * Anyone who reaches the port may connect, and a connection that sends its first request a byte
 * at a time (or not at all) holds a file descriptor and memory for as long as it is let. So a
 * connection must have sent a whole first request (HTTP/1 headers, or an HTTP/2 stream's) within
 * `pendingMs`, and at most `maxPending` connections may be waiting for theirs: one more, and the
 * oldest waiting is cut. A real client sends its request as soon as it connects, so it waits
 * for milliseconds and is never the oldest; a flood only ever crowds itself out. Once a connection
 * sent a request it is the server's to judge (the gate answers 401 and hangs up on one without the
 * token; a worker, 401 on an unsigned one).
 */
import type net from "node:net";
import { endpoint } from "./worker-proof.js";

export interface ListenOptions {
  /** Default 0: any free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Connections at most waiting for their first request (default 128); the oldest is cut beyond. */
  maxPending?: number;
  /** How long a connection may take to send its first request (default 10 s). */
  pendingMs?: number;
}

export interface Listening {
  url: string;
  port: number;
  /** Tells the guard that the connection `socket` (its remote end) sent a whole request. */
  started(socket: { remoteAddress?: string | undefined; remotePort?: number | undefined }): void;
  /** How many connections the guard cut so far (waiting too long, or crowded out). */
  cut(): number;
}

/** Guards `server`'s connections, listens, and resolves once it does (rejects with the listen error, EADDRINUSE say). */
export async function listen(server: net.Server, options: ListenOptions = {}): Promise<Listening> {
  const maxPending = options.maxPending ?? 128;
  const pendingMs = options.pendingMs ?? 10_000;
  const pending = new Map<string, { socket: net.Socket; timer: NodeJS.Timeout }>();
  let cut = 0;
  const drop = (key: string) => {
    const entry = pending.get(key);
    if (entry === undefined) return;
    pending.delete(key);
    clearTimeout(entry.timer);
    cut++;
    // a reset: an HTTP/2 session reads the socket's handle itself, and a plain destroy leaves it open
    entry.socket.resetAndDestroy();
  };
  server.on("connection", (socket: net.Socket) => {
    const key = endpoint(socket.remoteAddress, socket.remotePort);
    const timer = setTimeout(() => drop(key), pendingMs);
    timer.unref();
    pending.set(key, { socket, timer });
    socket.once("close", () => {
      const entry = pending.get(key);
      if (entry?.socket !== socket) return;
      clearTimeout(entry.timer);
      pending.delete(key);
    });
    // the map keeps the order of arrival: its first key is the oldest waiting
    while (pending.size > maxPending) drop(pending.keys().next().value!);
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
    started(socket) {
      const key = endpoint(socket.remoteAddress, socket.remotePort);
      const entry = pending.get(key);
      if (entry === undefined) return;
      clearTimeout(entry.timer);
      pending.delete(key);
    },
    cut: () => cut,
  };
}
