/**
 * What every TCP listener of the package shares (the gate, the proxy, a worker): listening on a
 * host and port, and the guard against connections that never get to a request.
 *
 * Anyone who reaches the port may connect, and a connection that sends its first request a byte
 * at a time (or not at all) holds a file descriptor and memory for as long as it is let. So a
 * connection must have sent a whole first request (HTTP/1 headers, or an HTTP/2 stream's) within
 * `pendingMs`, and at most `maxPending` connections may be waiting for theirs: one more, and the
 * oldest waiting is cut. A real client sends its request as soon as it connects, so it waits
 * for milliseconds and is never the oldest; a flood only ever crowds itself out.
 *
 * A request ends the wait in one of two ways. One that proved something (a signed request at a
 * worker, one with the token at the gate) takes the connection off the guard (`started`). One
 * that proves nothing, but that a real peer also makes on a connection it keeps (the proxy's
 * version question to a worker, answered to anyone), moves it to the idle (`answered`): no time
 * limit there, as the proxy's session may wait minutes for its next run, but at most `maxPending`
 * of them either, the oldest cut beyond. So a program that asks one question per connection (or
 * sends one unsigned request) cannot hold more than that many open.
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

/** A connection's remote end (an HTTP/2 compat request's `socket` is a stand-in, so it is told by its address). */
export type Peer = { remoteAddress?: string | undefined; remotePort?: number | undefined };

export interface Listening {
  url: string;
  port: number;
  /** Tells the guard that the connection `socket` (its remote end) sent a request that proved it (off the guard). */
  started(socket: Peer): void;
  /** Tells the guard that `socket` sent a request that proves nothing: idle, capped, no time limit (unless it was `started`). */
  answered(socket: Peer): void;
  /** How many connections the guard cut so far (waiting too long, or crowded out). */
  cut(): number;
}

/** Guards `server`'s connections, listens, and resolves once it does (rejects with the listen error, EADDRINUSE say). */
export async function listen(server: net.Server, options: ListenOptions = {}): Promise<Listening> {
  const maxPending = options.maxPending ?? 128;
  const pendingMs = options.pendingMs ?? 10_000;
  const pending = new Map<string, { socket: net.Socket; timer: NodeJS.Timeout }>();
  /** Connections that sent only requests that prove nothing, oldest first. */
  const idle = new Map<string, net.Socket>();
  let cut = 0;
  const cutSocket = (socket: net.Socket) => {
    cut++;
    // a reset: an HTTP/2 session reads the socket's handle itself, and a plain destroy leaves it open
    socket.resetAndDestroy();
  };
  const drop = (key: string) => {
    const entry = pending.get(key);
    if (entry === undefined) return;
    pending.delete(key);
    clearTimeout(entry.timer);
    cutSocket(entry.socket);
  };
  server.on("connection", (socket: net.Socket) => {
    const key = endpoint(socket.remoteAddress, socket.remotePort);
    const timer = setTimeout(() => drop(key), pendingMs);
    timer.unref();
    pending.set(key, { socket, timer });
    socket.once("close", () => {
      if (idle.get(key) === socket) idle.delete(key);
      const entry = pending.get(key);
      if (entry?.socket !== socket) return;
      clearTimeout(entry.timer);
      pending.delete(key);
    });
    // the map keeps the order of arrival: its first key is the oldest waiting
    while (pending.size > maxPending) drop(pending.keys().next().value!);
  });
  /** Takes the connection of `peer` out of waiting (clearing its timer): its socket, if it was waiting. */
  const unwait = (key: string): net.Socket | undefined => {
    const entry = pending.get(key);
    if (entry === undefined) return undefined;
    clearTimeout(entry.timer);
    pending.delete(key);
    return entry.socket;
  };
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
    started(peer) {
      const key = endpoint(peer.remoteAddress, peer.remotePort);
      unwait(key);
      idle.delete(key);
    },
    answered(peer) {
      const key = endpoint(peer.remoteAddress, peer.remotePort);
      const socket = unwait(key);
      if (socket === undefined) return; // idle already, or proven
      idle.set(key, socket);
      while (idle.size > maxPending) {
        const [oldest, first] = idle.entries().next().value!;
        idle.delete(oldest);
        cutSocket(first);
      }
    },
    cut: () => cut,
  };
}
