/**
 * `private_key_jwt` client authentication (RFC 7523 §2.2 and §3, OpenID Connect Core §9): the
 * client proves who it is with a short-lived JWT signed by its private key instead of a shared
 * secret. Claims: `iss` and `sub` the client id, `aud` the authorization server's issuer, `iat`,
 * `exp` (`ASSERTION_LIFETIME_S` later) and a random `jti`; header `alg`, `typ: "JWT"` and the
 * configured `kid`. The algorithm is the configured one, else the first that the server lists in
 * `token_endpoint_auth_signing_alg_values_supported` and the key can make, else the key's own
 * default (ES256 for a P-256 key, RS256 for RSA, EdDSA for Ed25519). Signed with node:crypto.
 */
import { constants, createPrivateKey, type KeyObject, randomUUID, sign } from "node:crypto";
import { readFileSync } from "node:fs";
import { McpAuthError } from "./auth-error.js";

/** The `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2). */
export const JWT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/** How long an assertion is valid: 5 minutes. */
export const ASSERTION_LIFETIME_S = 300;

/** The key of `private_key_jwt`. */
export interface PrivateKeyJwtSettings {
  /** The private key: a `KeyObject`, or PEM text (PKCS#8, SEC1 or PKCS#1). One of this and `privateKeyFile`. */
  privateKey?: KeyObject | string;
  /** A file holding the PEM private key. */
  privateKeyFile?: string;
  /** The key id the server knows the public key by (`kid` of the JWT header). */
  keyId?: string;
  /** The JWS algorithm (default: chosen from the server's metadata and the key). */
  signingAlgorithm?: string;
}

/** What each JWS algorithm needs: the key type, the digest, and how node:crypto signs with it. */
const ALGORITHMS: Record<string, { key: string; curve?: string; digest: string | null; pss?: number }> = {
  RS256: { key: "rsa", digest: "sha256" },
  RS384: { key: "rsa", digest: "sha384" },
  RS512: { key: "rsa", digest: "sha512" },
  PS256: { key: "rsa", digest: "sha256", pss: 32 },
  PS384: { key: "rsa", digest: "sha384", pss: 48 },
  PS512: { key: "rsa", digest: "sha512", pss: 64 },
  ES256: { key: "ec", curve: "prime256v1", digest: "sha256" },
  ES384: { key: "ec", curve: "secp384r1", digest: "sha384" },
  ES512: { key: "ec", curve: "secp521r1", digest: "sha512" },
  EdDSA: { key: "ed25519", digest: null },
};

/** The private key of `settings`; throws `McpAuthError` ("refused") naming what is wrong, never the key. */
export function loadPrivateKey(settings: PrivateKeyJwtSettings): KeyObject {
  const { privateKey, privateKeyFile } = settings;
  if (privateKey !== undefined && typeof privateKey !== "string") {
    if (privateKey.type !== "private")
      throw new McpAuthError("refused", "the private_key_jwt key is not a private key (KeyObject of another type)");
    return privateKey;
  }
  let pem = privateKey;
  if (pem === undefined && privateKeyFile !== undefined) {
    try {
      pem = readFileSync(privateKeyFile, "utf8");
    } catch (error) {
      throw new McpAuthError(
        "refused",
        `cannot read the private key file ${privateKeyFile} (${(error as NodeJS.ErrnoException).code ?? "error"})`,
      );
    }
  }
  if (pem === undefined)
    throw new McpAuthError("refused", 'private_key_jwt needs a private key ("privateKey" or "privateKeyFile")');
  try {
    return createPrivateKey(pem);
  } catch {
    throw new McpAuthError(
      "refused",
      `the private key${privateKeyFile !== undefined ? ` in ${privateKeyFile}` : ""} is not a PEM private key`,
    );
  }
}

/** The algorithms `key` can sign with. */
function algorithmsOf(key: KeyObject): string[] {
  const type = key.asymmetricKeyType;
  const curve = key.asymmetricKeyDetails?.namedCurve;
  return Object.entries(ALGORITHMS)
    .filter(([, a]) => a.key === type && (a.curve === undefined || a.curve === curve))
    .map(([name]) => name);
}

/** The algorithm to sign with: the configured one, else the first the server lists that the key can make. */
export function chooseAlgorithm(key: KeyObject, configured: string | undefined, serverLists: unknown): string {
  const possible = algorithmsOf(key);
  if (possible.length === 0)
    throw new McpAuthError("refused", `a ${key.asymmetricKeyType ?? "symmetric"} key cannot sign a client assertion`);
  if (configured !== undefined) {
    if (!possible.includes(configured))
      throw new McpAuthError(
        "refused",
        `the private key cannot sign with ${configured} (it can: ${possible.join(", ")})`,
      );
    return configured;
  }
  const listed = Array.isArray(serverLists) ? serverLists.filter((a): a is string => typeof a === "string") : [];
  if (listed.length === 0) return possible[0]!;
  const match = listed.find((a) => possible.includes(a));
  if (match === undefined)
    throw new McpAuthError(
      "refused",
      `the authorization server accepts client assertions signed with ${listed.join(", ")}; the key can make ${possible.join(", ")}`,
    );
  return match;
}

/**
 * A signed client assertion for `clientId` at the authorization server `audience` (its issuer).
 * `now` in milliseconds.
 */
export function clientAssertion(
  key: KeyObject,
  algorithm: string,
  clientId: string,
  audience: string,
  keyId: string | undefined,
  now: number,
): string {
  const spec = ALGORITHMS[algorithm];
  if (spec === undefined) throw new McpAuthError("refused", `unknown JWS algorithm ${algorithm}`);
  const iat = Math.floor(now / 1000);
  const header = { alg: algorithm, typ: "JWT", ...(keyId !== undefined && { kid: keyId }) };
  const claims = {
    iss: clientId,
    sub: clientId,
    aud: audience,
    iat,
    exp: iat + ASSERTION_LIFETIME_S,
    jti: randomUUID(),
  };
  const input = `${base64url(header)}.${base64url(claims)}`;
  const signature = sign(spec.digest, Buffer.from(input), {
    key,
    ...(spec.key === "ec" && { dsaEncoding: "ieee-p1363" as const }),
    ...(spec.pss !== undefined && { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: spec.pss }),
  });
  return `${input}.${signature.toString("base64url")}`;
}

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}
