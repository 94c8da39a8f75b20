/**
 * The scheme rule of every URL authorization talks to (issuer, authorization, token and
 * registration endpoints, protected resource metadata): https, or http on a loopback host
 * (127.0.0.0/8, ::1, localhost) for servers on the same machine: the one outbound policy's rule
 * (`models/http/outbound.ts`), which also holds it on every redirect hop. Anything else would send codes,
 * verifiers, secrets or tokens in the clear (or to a `file:`/`javascript:` URL), so it is refused.
 */
import { isSecureUrl } from "../../models/http/outbound.js";
import { McpAuthError } from "./auth-error.js";

export { isSecureUrl };

/**
 * `url` as a URL when it keeps the rule; else throws `McpAuthError` ("discovery") naming `what`
 * and the URL's origin only (a URL's query could hold a code or a token).
 */
export function requireSecureUrl(url: string, what: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new McpAuthError("discovery", `the ${what} is not a URL`);
  }
  if (!isSecureUrl(parsed)) {
    const origin = parsed.origin === "null" ? `${parsed.protocol}…` : parsed.origin;
    throw new McpAuthError(
      "discovery",
      `the ${what} ${origin} is not https (http only on 127.0.0.1, ::1 or localhost); refused`,
    );
  }
  return parsed;
}
