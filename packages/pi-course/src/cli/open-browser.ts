/**
 * Opens a URL in the person's browser, where there is one: the program `$BROWSER` names (the
 * first of a `:`-separated list; `%s` in it is replaced by the URL, else the URL is its last
 * argument), else `open` on macOS, `rundll32 url.dll,FileProtocolHandler` on Windows (no `cmd`,
 * whose `&`, `|`, `^`, `<`, `>` would cut the URL or run what follows), `xdg-open` elsewhere when
 * it is on PATH. Only http(s) URLs are opened: anything else (a `file:` URL, a program) is not.
 * The program runs detached and its output is ignored; a browser that cannot be started is not
 * an error (the caller has printed the URL for the person to open by hand).
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";

/** Opens `url`; resolves with the program used, or undefined when none could be. */
export async function openBrowser(url: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const command = browserCommand(url, env);
  if (command === undefined) return undefined;
  const [program, ...args] = command;
  return new Promise((resolve) => {
    try {
      const child = spawn(program!, args, { stdio: "ignore", detached: true, env });
      child.once("error", () => resolve(undefined));
      child.once("spawn", () => {
        child.unref();
        resolve(program);
      });
    } catch {
      resolve(undefined);
    }
  });
}

/** The program and arguments that would open `url` (undefined: no browser here, or not an http(s) URL). */
export function browserCommand(url: string, env: NodeJS.ProcessEnv): string[] | undefined {
  if (!/^https?:\/\//i.test(url)) return undefined;
  const chosen = env.BROWSER?.split(":").find((entry) => entry.trim() !== "");
  if (chosen !== undefined) {
    const words = chosen.trim().split(/\s+/);
    return words.some((word) => word.includes("%s"))
      ? words.map((word) => word.replace(/%s/g, () => url))
      : [...words, url];
  }
  if (process.platform === "darwin") return ["open", url];
  if (process.platform === "win32") return ["rundll32", "url.dll,FileProtocolHandler", url];
  const onPath = (env.PATH ?? "")
    .split(path.delimiter)
    .some((dir) => dir !== "" && existsSync(path.join(dir, "xdg-open")));
  return onPath ? ["xdg-open", url] : undefined;
}
