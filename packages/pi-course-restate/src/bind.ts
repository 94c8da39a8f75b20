/**
 * Bind addresses: where the engine's gate (`engine --bind`) and a worker (`worker --host`) listen.
 *
 * Any address may be given, other machines' too: the gate lets in only requests that carry the
 * token of the engine's `client.json`, and a worker serves only requests signed with the engine's
 * identity key (`--identity-keys-file`). What is checked here is that the address is one to listen
 * on, so a typo is said at once and not as a failure to listen.
 */
import net from "node:net";

/** Throws unless `host` is an IP address (an IPv6 one bare or in brackets) or `localhost`; `flag` names the option. */
export function checkBind(flag: string, host: string): void {
  const bare = host.replace(/^\[|\]$/g, "");
  if (bare !== "localhost" && net.isIP(bare) === 0) {
    throw new Error(`${flag} must be an IP address to listen on (such as 127.0.0.1 or 10.0.0.5), got ${host}`);
  }
}
