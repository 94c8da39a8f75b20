/**
 * Request identity: how a worker knows a request comes from its engine.
 *
 * The engine signs every request it sends to a deployment (discovery and each invocation) with an
 * Ed25519 private key: Restate's request identity v1, a short-lived JWT whose audience is the
 * request's path. Workers are given the matching public key (`publickeyv1_<base58>`) and the SDK
 * refuses anything unsigned or signed with another key (401).
 *
 * `engineIdentity(dir)` makes the key pair once, in the engine's own folder: the private key in
 * `request-identity.pem` (0600, read only by the Restate server), the public key in
 * `identity-keys` (0600: not a secret, but a worker trusts whatever this file names, so only its
 * owner may write it). A worker reads it from a file or from its environment
 * (`readIdentityKeys`); a key never travels on a command line, where `ps` shows it to every user.
 */
import { generateKeyPairSync } from "node:crypto";
import { readFileSync } from "node:fs";
import { chmod, readFile, writeFile } from "node:fs/promises";
import path from "node:path";

/** The environment variable a worker reads its identity keys from (comma-separated), when no file is given. */
export const IDENTITY_KEYS_ENV = "PI_RESTATE_IDENTITY_KEYS";

export interface EngineIdentity {
  /** The private key's file, for the Restate server's `request-identity-private-key-pem-file`. */
  privateKeyFile: string;
  /** The file of the public key a worker is given. */
  publicKeyFile: string;
  /** The public key, `publickeyv1_…`. */
  publicKey: string;
}

/** The key pair in `dir`, made (once) if missing. `dir` must be the owner's alone (the engine makes it 0700). */
export async function engineIdentity(dir: string): Promise<EngineIdentity> {
  const privateKeyFile = path.join(dir, "request-identity.pem");
  const publicKeyFile = path.join(dir, "identity-keys");
  try {
    const publicKey = (await readFile(publicKeyFile, "utf8")).trim();
    await readFile(privateKeyFile); // both, or make both again
    return { privateKeyFile, publicKeyFile, publicKey };
  } catch {
    const pair = generateKeyPairSync("ed25519");
    const raw = Buffer.from(pair.publicKey.export({ format: "jwk" }).x ?? "", "base64url");
    const publicKey = `publickeyv1_${base58(raw)}`;
    await writeFile(privateKeyFile, pair.privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
    await writeFile(publicKeyFile, `${publicKey}\n`, { mode: 0o600 });
    await chmod(privateKeyFile, 0o600);
    await chmod(publicKeyFile, 0o600);
    return { privateKeyFile, publicKeyFile, publicKey };
  }
}

/**
 * The identity keys a worker verifies requests with: from `file` (one key per line, or commas)
 * when given, else from `PI_RESTATE_IDENTITY_KEYS`. Throws, saying where to get them, when there
 * are none or one is not a `publickeyv1_` key.
 */
export function readIdentityKeys(file: string | undefined, env: NodeJS.ProcessEnv = process.env): string[] {
  const where = file === undefined ? `$${IDENTITY_KEYS_ENV}` : file;
  let text: string;
  if (file !== undefined) {
    try {
      text = readFileSync(file, "utf8");
    } catch (error) {
      throw new Error(`cannot read the identity keys file ${file}: ${(error as Error).message}`);
    }
  } else {
    text = env[IDENTITY_KEYS_ENV] ?? "";
  }
  const keys = text
    .split(/[\s,]+/)
    .map((key) => key.trim())
    .filter((key) => key !== "");
  if (keys.length === 0) {
    throw new Error(
      `no identity key in ${where}: a worker accepts only requests its engine signed. ` +
        "Give it the file `identity-keys` from the engine's --dir (--identity-keys-file FILE), " +
        `or set ${IDENTITY_KEYS_ENV} in its environment.`,
    );
  }
  const bad = keys.find((key) => !/^publickeyv1_[1-9A-HJ-NP-Za-km-z]+$/.test(key));
  if (bad !== undefined) throw new Error(`${where} holds ${JSON.stringify(bad)}, which is not a publickeyv1_ key`);
  return keys;
}

const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** Base58 (Bitcoin's alphabet), as Restate writes its public keys. */
export function base58(bytes: Uint8Array): string {
  let n = 0n;
  for (const byte of bytes) n = n * 256n + BigInt(byte);
  let out = "";
  while (n > 0n) {
    out = ALPHABET[Number(n % 58n)] + out;
    n /= 58n;
  }
  for (const byte of bytes) {
    if (byte !== 0) break;
    out = `1${out}`;
  }
  return out;
}
