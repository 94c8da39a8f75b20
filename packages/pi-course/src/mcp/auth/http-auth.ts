/**
 * The seam between the Streamable HTTP transport and authorization: the transport asks for the
 * `Authorization` header of each request, and reports a 401 or a 403 answer; what a token is and
 * how it is had (`McpOAuth`, or anything else) is not its business.
 *
 * Contract for the transport: a request answered 401 is sent again once after `unauthorized`
 * resolves (with the new header), and a second 401 is reported with `retried: true` (which
 * throws); a 403 is sent again once when `forbidden` resolves true. An error either throws is
 * the request's error, said as it is (it tells the person what to do).
 */
export interface HttpAuth {
  /** The `Authorization` header value for the next request; undefined: send none. */
  authorization(): Promise<string | undefined>;
  /**
   * The server answered 401 with `challenge` (its `WWW-Authenticate`, or null). Resolves once a
   * new token is there (send again); throws an error that says what to do when none can be had.
   */
  unauthorized(challenge: string | null, retried: boolean): Promise<void>;
  /** The server answered 403 with `challenge`: true once a token with the wider scope is there. Throws with what to do. */
  forbidden(challenge: string | null): Promise<boolean>;
}
