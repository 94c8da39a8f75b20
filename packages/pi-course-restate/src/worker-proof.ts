/**
 * How a worker proves to the engine's proxy that it is one of the engine's workers, before the
 * proxy sends it anything of a run.
 *
 * Restate signs what it sends (a worker knows its engine), but a worker's address is only a port:
 * when a worker dies, any local user may listen on its port, and the proxy would send it the runs
 * meant for the worker (their input: prompts, case data) and take its answers. So, on every new
 * connection, before any run, the proxy asks `GET VERSION_PATH` with a fresh random challenge
 * (`CHALLENGE_HEADER`), and the worker answers its version with a proof: an HMAC-SHA256, keyed
 * with the workers' secret (`identity.ts`), of the challenge, the version, and the address and
 * port the connection reached it on. The proxy checks the proof against the address and port it
 * connected to; a listener without the secret, or one that relays the challenge to a real worker
 * elsewhere (that worker proves its own address, not this one), gets no run.
 *
 * Binding the address means the proxy must reach a worker at the address the worker sees: no
 * address translation (NAT, a container's published port) between them.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** Where a worker says its version (plain JSON `{ "version": "…", "proof": "…" }`). */
export const VERSION_PATH = "/pi-course-restate/version";

/**
 * Whether a request to `path` is one a worker answers with a success only when the engine signed it:
 * exactly `/discover` or `/invoke/<service>/<handler>`, judged on the path as the worker's SDK reads
 * it (resolved like a URL: `..`, `\\` and the query undone). The SDK routes by the last segments, so
 * a path that only starts like these (`/invoke/health`, `/invoke/../health`, `/discover/health`) is
 * its health check, answered 200 to anyone: such an answer proves nothing.
 */
export function isSignedPath(path: string): boolean {
  let resolved: string;
  try {
    resolved = new URL(path, "https://worker.invalid").pathname;
  } catch {
    return false;
  }
  return /^\/(discover|invoke\/[^/]+\/[^/]+)$/.test(resolved);
}

/** The request header that carries the proxy's challenge (32 random bytes, base64url). */
export const CHALLENGE_HEADER = "x-pi-restate-challenge";

/** A fresh challenge. */
export function newChallenge(): string {
  return randomBytes(32).toString("base64url");
}

/** Whether `text` has the shape of a challenge (what a worker agrees to prove). */
export function isChallenge(text: unknown): text is string {
  return typeof text === "string" && /^[A-Za-z0-9_-]{43}$/.test(text);
}

/** `address:port` of one end of a connection, an IPv4-mapped IPv6 address written as IPv4. */
export function endpoint(address: string | undefined, port: number | undefined): string {
  return `${(address ?? "").replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "")}:${port ?? 0}`;
}

/** The proof of `version` for `challenge`, reached at `where` (`endpoint`), with `secret`. */
export function workerProof(secret: string, challenge: string, where: string, version: string): string {
  return createHmac("sha256", secret)
    .update(`pi-course-restate worker proof v1\n${challenge}\n${where}\n${version}`)
    .digest("base64url");
}

/** Whether `proof` is the proof of `version` for `challenge` at `where`, compared in constant time. */
export function proofHolds(secret: string, challenge: string, where: string, version: string, proof: unknown): boolean {
  if (typeof proof !== "string") return false;
  const expected = Buffer.from(workerProof(secret, challenge, where, version));
  const given = Buffer.from(proof);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
