/**
 * Request identity: how a worker knows a request comes from its engine.
 *
 * The engine signs every request it sends to a deployment (discovery and each invocation) with an
 * Ed25519 private key: Restate's request identity v1, a short-lived JWT whose audience is the
 * request's path. Workers are given the matching public key (`publickeyv1_<base58>`) and the SDK
 * refuses anything unsigned or signed with another key (401).
 *
 * The other way round, a worker proves to the engine's proxy that it is one of the engine's
 * workers before the proxy sends it any run (`worker-proof.ts`): with the workers' secret
 * (`workersecretv1_<base64url>`, 32 random bytes), which no one else holds.
 *
 * `engineIdentity(dir)` makes both once, in the engine's own folder: the private key in
 * `request-identity.pem` (0600, read only by the Restate server); the public key and the workers'
 * secret in `identity-keys` (0600: the workers' credential, a secret since it holds theirs). A
 * worker reads that file, or the same text from its environment (`readWorkerCredential`); it never
 * travels on a command line, where `ps` shows it to every user.
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { closeSync, constants as fsConstants, fstatSync, openSync, readFileSync } from "node:fs";
import { chmod, readFile, writeFile } from "node:fs/promises";
import path from "node:path";

/**
 * The environment variable a worker reads its credential from (the `identity-keys` file's
 * entries, comma-separated), when no file is given.
 */
export const IDENTITY_KEYS_ENV = "PI_RESTATE_IDENTITY_KEYS";

/** What a worker is given: the keys it verifies the engine's requests with, and the secret it proves itself with. */
export interface WorkerCredential {
  /** The engine's public keys (`publickeyv1_…`): only requests signed with one of them are served. */
  identityKeys: readonly string[];
  /** The workers' secret (`workersecretv1_…`): what the engine's proxy asks a worker to prove before sending it runs. */
  workerSecret: string;
}

const PUBLIC_KEY = /^publickeyv1_[1-9A-HJ-NP-Za-km-z]+$/;
const WORKER_SECRET = /^workersecretv1_[A-Za-z0-9_-]{43}$/;

export interface EngineIdentity {
  /** The private key's file, for the Restate server's `request-identity-private-key-pem-file`. */
  privateKeyFile: string;
  /** The file of the public key a worker is given. */
  publicKeyFile: string;
  /** The public key, `publickeyv1_…`. */
  publicKey: string;
  /** The workers' secret, `workersecretv1_…` (in `publicKeyFile` too). */
  workerSecret: string;
}

/**
 * The key pair and the workers' secret in `dir`, made (once) if missing; a folder of an engine
 * from before workers proved themselves gets its secret added (its workers need the new file).
 * `dir` must be the owner's alone (the engine makes it 0700).
 */
export async function engineIdentity(dir: string): Promise<EngineIdentity> {
  const privateKeyFile = path.join(dir, "request-identity.pem");
  const publicKeyFile = path.join(dir, "identity-keys");
  const write = async (publicKey: string, workerSecret: string) => {
    await writeFile(publicKeyFile, `${publicKey}\n${workerSecret}\n`, { mode: 0o600 });
    await chmod(publicKeyFile, 0o600);
  };
  let entries: string[];
  try {
    entries = entriesOf(await readFile(publicKeyFile, "utf8"));
    await readFile(privateKeyFile); // both, or make both again
  } catch {
    const pair = generateKeyPairSync("ed25519");
    const raw = Buffer.from(pair.publicKey.export({ format: "jwk" }).x ?? "", "base64url");
    const publicKey = `publickeyv1_${base58(raw)}`;
    const workerSecret = newWorkerSecret();
    await writeFile(privateKeyFile, pair.privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
    await chmod(privateKeyFile, 0o600);
    await write(publicKey, workerSecret);
    return { privateKeyFile, publicKeyFile, publicKey, workerSecret };
  }
  const publicKey = entries.find((entry) => PUBLIC_KEY.test(entry));
  if (publicKey === undefined)
    throw new Error(`${publicKeyFile} holds no publickeyv1_ key; remove it and ${privateKeyFile} to make new ones`);
  let workerSecret = entries.find((entry) => WORKER_SECRET.test(entry));
  if (workerSecret === undefined) {
    workerSecret = newWorkerSecret();
    await write(publicKey, workerSecret);
  }
  return { privateKeyFile, publicKeyFile, publicKey, workerSecret };
}

/** A new workers' secret: 32 random bytes. */
export function newWorkerSecret(): string {
  return `workersecretv1_${randomBytes(32).toString("base64url")}`;
}

/**
 * A worker's credential: from `file` (the engine's `identity-keys`: one entry per line, or commas)
 * when given, else from `PI_RESTATE_IDENTITY_KEYS`. Throws, saying where to get it, when it has no
 * public key or no workers' secret (a file from an engine of before workers proved themselves), or
 * an entry is neither.
 */
export function readWorkerCredential(file: string | undefined, env: NodeJS.ProcessEnv = process.env): WorkerCredential {
  const where = file === undefined ? `$${IDENTITY_KEYS_ENV}` : file;
  let text: string;
  if (file !== undefined) {
    text = readSecretFile(file);
  } else {
    text = env[IDENTITY_KEYS_ENV] ?? "";
  }
  const entries = entriesOf(text);
  const getIt =
    "Give it the file `identity-keys` from the engine's --dir (--identity-keys-file FILE), " +
    `or set ${IDENTITY_KEYS_ENV} in its environment to that file's text.`;
  if (entries.length === 0) {
    throw new Error(`no identity key in ${where}: a worker accepts only requests its engine signed. ${getIt}`);
  }
  const bad = entries.find((entry) => !PUBLIC_KEY.test(entry) && !WORKER_SECRET.test(entry));
  if (bad !== undefined) {
    const shown = bad.startsWith("workersecret") ? "a malformed workersecretv1_ entry" : JSON.stringify(bad);
    throw new Error(`${where} holds ${shown}, which is neither a publickeyv1_ key nor a workersecretv1_ secret`);
  }
  const identityKeys = entries.filter((entry) => PUBLIC_KEY.test(entry));
  const secrets = entries.filter((entry) => WORKER_SECRET.test(entry));
  if (identityKeys.length === 0) {
    throw new Error(`no identity key in ${where}: a worker accepts only requests its engine signed. ${getIt}`);
  }
  if (secrets.length !== 1) {
    throw new Error(
      `${where} holds ${secrets.length === 0 ? "no" : "more than one"} workers' secret (workersecretv1_…): ` +
        "the engine sends runs only to workers that prove they hold its secret, and the engine's identity-keys " +
        `file has it since this version (an older copy does not). ${getIt}`,
    );
  }
  return { identityKeys, workerSecret: secrets[0]! };
}

/**
 * The text of the identity keys file `file`, refused unless it is this user's alone: it holds the
 * workers' secret, with which anyone could pass for a worker on a dead worker's port and be sent
 * runs. Judged on the open file it is read from (a path looked at, then read, can name two files),
 * opened without blocking (a FIFO in its place would hold the start for ever).
 */
function readSecretFile(file: string): string {
  let fd: number;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch (error) {
    throw new Error(`cannot read the identity keys file ${file}: ${(error as Error).message}`);
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw new Error(`the identity keys file ${file} is not a file`);
    const me = process.getuid?.();
    if (me !== undefined && info.uid !== me) {
      throw new Error(
        `the identity keys file ${file} belongs to another user (uid ${info.uid}); it holds the workers' secret, ` +
          "which must be this worker's user's alone. Copy the engine's identity-keys as your own (chmod 600).",
      );
    }
    if ((info.mode & 0o077) !== 0) {
      throw new Error(
        `the identity keys file ${file} can be read by other users (mode ${(info.mode & 0o777).toString(8)}); ` +
          "it holds the workers' secret, with which anyone could pass for a worker and be sent runs. " +
          `Run \`chmod 600 ${file}\`.`,
      );
    }
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}

/** The entries of an identity keys text: split on blanks and commas. */
function entriesOf(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
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
