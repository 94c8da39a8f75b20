/**
 * PKCE (RFC 7636) with the `S256` method, which the MCP authorization profile requires: a random
 * `code_verifier` kept by the client, and its SHA-256 in base64url (`code_challenge`) sent on
 * the authorization request; the token request proves the code is the client's by sending the
 * verifier. Also the `state` that ties the redirect back to the request the client made.
 */
import { createHash, randomBytes } from "node:crypto";

/** A verifier and its S256 challenge. */
export interface Pkce {
  /** 43 characters of base64url (32 random bytes): sent only to the token endpoint. */
  verifier: string;
  /** base64url(SHA-256(verifier)): sent on the authorization request. */
  challenge: string;
  method: "S256";
}

/** A fresh verifier and its challenge. */
export function createPkce(): Pkce {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: s256(verifier), method: "S256" };
}

/** The S256 challenge of `verifier`. */
export function s256(verifier: string): string {
  return createHash("sha256").update(verifier).digest("base64url");
}

/** A random `state` (base64url of 16 bytes), checked when the browser comes back. */
export function randomState(): string {
  return randomBytes(16).toString("base64url");
}
