/** `pi-course-restate engine`: a Restate server and the proxy in front of the workers, until Ctrl-C. */
import path from "node:path";
import { checkBind } from "../bind.js";
import { startProxy } from "../proxy.js";
import { startRestateServer } from "../restate-server.js";
import { type Command, parse, UsageError, wholeNumber } from "./command.js";

export const engine: Command = {
  name: "engine",
  summary: "start the engine (Restate) in front of the workers; runs until Ctrl-C",
  help: `usage: pi-course-restate engine --dir DIR --workers URL[,URL…] [options]

Starts a Restate server (its data in DIR) and a proxy in front of the workers, registers the proxy
as the workers' one address, and prints the ingress (where runs are submitted) and admin URLs.

  --dir DIR                the engine's data folder (created if missing; the runs live here)
  --workers URL[,URL…]     the workers' addresses, e.g. http://127.0.0.1:9081 (at least one listening)
  --bind ADDR              where the ingress and admin API listen (default 127.0.0.1: this machine
                           only); any other address needs --credential-file
  --credential-file FILE   the credential a non-loopback bind needs (mode 0600)
  --proxy-port N           the proxy's port (default: any free one)

Needs the Restate server: npm install @restatedev/restate-server@1.7.12
`,
  async run(args) {
    const { values } = parse(args, {
      dir: { type: "string" },
      workers: { type: "string" },
      bind: { type: "string" },
      "credential-file": { type: "string" },
      "proxy-port": { type: "string" },
    });
    if (values.dir === undefined) throw new UsageError("--dir is needed: the folder the engine keeps its runs in");
    const workers = (values.workers ?? "").split(",").filter((url) => url !== "");
    if (workers.length === 0) throw new UsageError("--workers is needed: the URL of at least one worker");
    const bind = values.bind ?? "127.0.0.1";
    checkBind("the engine", "--bind", bind, values["credential-file"]);
    const proxyPort = values["proxy-port"] === undefined ? 0 : wholeNumber("--proxy-port", values["proxy-port"], 0);
    const server = await startRestateServer({ dir: path.resolve(values.dir), bind });
    const proxy = await startProxy({ workers, port: proxyPort });
    try {
      await server.register(proxy.url);
    } catch (error) {
      await proxy.close();
      await server.stop();
      throw new Error(
        `${error instanceof Error ? error.message : error}\nNo worker answered at ${workers.join(", ")}: start one there first (\`pi-course-restate worker --port N\`).`,
      );
    }
    process.stdout.write(
      `engine: ingress ${server.ingressUrl}  admin ${server.adminUrl}  workers behind ${proxy.url}\n`,
    );
    await new Promise<void>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
    await proxy.close();
    await server.stop();
    return 0;
  },
};
