/** A credential for a worker no engine talks to (tests of the worker process alone). */
import { generateKeyPairSync } from "node:crypto";
import { base58, newWorkerSecret, type WorkerCredential } from "../../src/identity.js";

export function someIdentityKey(): string {
  const raw = Buffer.from(generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" }).x ?? "", "base64url");
  return `publickeyv1_${base58(raw)}`;
}

export function someCredential(): WorkerCredential {
  return { identityKeys: [someIdentityKey()], workerSecret: newWorkerSecret() };
}
