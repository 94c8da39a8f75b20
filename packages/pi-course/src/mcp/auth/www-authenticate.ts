/**
 * The `Bearer` challenge of a `WWW-Authenticate` header (RFC 6750 §3, RFC 9728 §5.1): what a
 * protected MCP server says when it answers 401 (no or a bad token) or 403 (a token without the
 * scope it needs). The parameters the client reads: `resource_metadata` (where the server's
 * protected resource metadata is), `scope` (the scopes the request needs), `error`
 * (`invalid_token`, `insufficient_scope`) and `error_description`.
 */

/** The parameters of a `Bearer` challenge (each absent when the header does not give it). */
export interface BearerChallenge {
  error?: string;
  errorDescription?: string;
  /** The scopes asked for, split at spaces. */
  scope?: string[];
  /** The URL of the protected resource metadata document (RFC 9728). */
  resourceMetadata?: string;
}

/**
 * The `Bearer` challenge of `header` (a header may list several schemes; others are skipped).
 * Parameters are `name=token` or `name="quoted string"` (with `\"` escapes). Never throws: an
 * unreadable header gives `{}`.
 */
export function parseBearerChallenge(header: string | null | undefined): BearerChallenge {
  if (header === null || header === undefined) return {};
  const params = new Map<string, string>();
  let inBearer = false;
  // a scheme name, or one auth-param; commas separate both
  const token =
    /\s*(?:([A-Za-z0-9!#$%&'*+.^_`|~-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))|([A-Za-z0-9!#$%&'*+.^_`|~-]+))\s*,?/gy;
  for (let match = token.exec(header); match !== null && match[0] !== ""; match = token.exec(header)) {
    const [, name, quoted, bare, scheme] = match;
    if (scheme !== undefined) {
      inBearer = scheme.toLowerCase() === "bearer";
      continue;
    }
    if (!inBearer || name === undefined) continue;
    const value = quoted !== undefined ? quoted.replace(/\\(.)/g, "$1") : (bare ?? "");
    const key = name.toLowerCase();
    if (!params.has(key)) params.set(key, value);
  }
  const out: BearerChallenge = {};
  const error = params.get("error");
  if (error !== undefined) out.error = error;
  const description = params.get("error_description");
  if (description !== undefined) out.errorDescription = description;
  const scope = params.get("scope");
  if (scope !== undefined && scope.trim() !== "") out.scope = scope.trim().split(/\s+/);
  const metadata = params.get("resource_metadata");
  if (metadata !== undefined && metadata !== "") out.resourceMetadata = metadata;
  return out;
}
