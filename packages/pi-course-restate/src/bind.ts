/**
 * Bind addresses: where the engine (ingress, admin) and a worker listen.
 *
 * On a loopback address (127.0.0.0/8, ::1, localhost) only this machine reaches them. Any other
 * address is reachable by other machines, so it needs the credential a request must carry
 * (`--credential-file`, a file only its owner can read: mode 0600). `checkBind` refuses to start
 * otherwise, saying what to do.
 */
import { statSync } from "node:fs";
import net from "node:net";

/** Whether `host` is a loopback address (or `localhost`). */
export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (net.isIPv4(host)) return host.startsWith("127.");
  const bare = host.replace(/^\[|\]$/g, "");
  return net.isIPv6(bare) && (bare === "::1" || bare.startsWith("::ffff:127."));
}

/**
 * Throws unless `host` is an IP address or `localhost`, and unless a non-loopback `host` comes
 * with `credentialFile`; a credential file given (needed or not) must be a regular file of this
 * user's that no one else can read or write.
 * `what` names the listener (`the engine`, `the worker`) and `flag` its bind option.
 */
export function checkBind(what: string, flag: string, host: string, credentialFile: string | undefined): void {
  const bare = host.replace(/^\[|\]$/g, "");
  if (bare !== "localhost" && net.isIP(bare) === 0) {
    throw new Error(`${flag} must be an IP address to listen on (such as 127.0.0.1 or 10.0.0.5), got ${host}`);
  }
  if (credentialFile === undefined) {
    if (isLoopback(bare)) return;
    throw new Error(
      `${what} refuses to listen on ${host} without a credential: other machines can reach that address. ` +
        "Pass --credential-file FILE (a file only you can read: chmod 600), or listen on 127.0.0.1.",
    );
  }
  let mode: number;
  let uid: number;
  try {
    const stat = statSync(credentialFile);
    if (!stat.isFile()) throw new Error("not a file");
    ({ mode, uid } = stat);
  } catch (error) {
    throw new Error(
      `--credential-file ${credentialFile} cannot be read (${(error as Error).message}); name the credential file`,
    );
  }
  if ((mode & 0o077) !== 0 || (process.getuid !== undefined && uid !== process.getuid())) {
    throw new Error(
      `--credential-file ${credentialFile} must be yours and readable by you alone (mode ${(mode & 0o777).toString(8)}): chmod 600 ${credentialFile}`,
    );
  }
}
