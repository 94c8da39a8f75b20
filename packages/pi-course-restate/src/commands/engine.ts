/** `pi-course-restate engine`: the engine (`startEngine`) in front of the workers, until Ctrl-C. */
import path from "node:path";
import { checkBind } from "../bind.js";
import { startEngine } from "../engine.js";
import { type Command, parse, UsageError, wholeNumber } from "./command.js";

export const engine: Command = {
  name: "engine",
  summary: "start the engine (Restate) in front of the workers; runs until Ctrl-C",
  help: `usage: pi-course-restate engine --dir DIR --workers URL[,URL…] [options]

Starts the engine: a Restate server on Unix sockets inside DIR (made 0700), one gate in front of
its ingress and admin API that lets in only requests carrying the token of DIR/client.json, and a
proxy in front of the workers (each version of worker code a deployment of its own). Prints the
gate's URL, the credential file clients use (\`--engine DIR\`) and the file of identity keys the
workers need (\`worker --identity-keys-file\`).

  --dir DIR                the engine's folder (created 0700 if missing; the runs and the
                           credential live here)
  --workers URL[,URL…]     the workers' addresses, e.g. http://127.0.0.1:9081 (those not
                           answering yet are taken once they do)
  --bind ADDR              where the gate listens (default 127.0.0.1: this machine only); another
                           address lets other machines in, with the token of DIR/client.json
  --port N                 the gate's port (default: the one it had, else any free one)
  --proxy-port N           the proxy's port (default: the one it had, else any free one)
  --max-restarts N         restarts of the Restate server within a minute before the engine
                           gives up (default 5)

Needs the Restate server: npm install @restatedev/restate-server@1.7.12
`,
  async run(args) {
    const { values } = parse(args, {
      dir: { type: "string" },
      workers: { type: "string" },
      bind: { type: "string" },
      port: { type: "string" },
      "proxy-port": { type: "string" },
      "max-restarts": { type: "string" },
    });
    if (values.dir === undefined) throw new UsageError("--dir is needed: the folder the engine keeps its runs in");
    const workers = (values.workers ?? "").split(",").filter((url) => url !== "");
    if (workers.length === 0) throw new UsageError("--workers is needed: the URL of at least one worker");
    if (values.bind !== undefined) checkBind("--bind", values.bind);
    const running = await startEngine({
      dir: path.resolve(values.dir),
      workers,
      ...(values.bind !== undefined && { host: values.bind }),
      ...(values.port !== undefined && { port: wholeNumber("--port", values.port, 0) }),
      ...(values["proxy-port"] !== undefined && { proxyPort: wholeNumber("--proxy-port", values["proxy-port"], 0) }),
      maxRestarts: values["max-restarts"] === undefined ? 5 : wholeNumber("--max-restarts", values["max-restarts"], 0),
    });
    process.stdout.write(
      `engine: ${running.url} (credential: ${running.connectionFile}; workers: --identity-keys-file ${running.identityKeysFile}; proxy ${running.proxyUrl})\n`,
    );
    const failure = await Promise.race([
      running.failed,
      new Promise<undefined>((resolve) => {
        process.once("SIGINT", () => resolve(undefined));
        process.once("SIGTERM", () => resolve(undefined));
      }),
    ]);
    await running.stop();
    if (failure !== undefined) throw failure;
    return 0;
  },
};
