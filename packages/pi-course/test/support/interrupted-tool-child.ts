/**
 * The child of the interrupted-tool test: an `Agent` with a session whose one tool never returns.
 *
 * `node --import tsx interrupted-tool-child.ts <session file>`: creates the session, prompts; the
 * scripted model calls the tool `wait`, which prints `tool started` and waits forever. The parent
 * kills this process (SIGKILL) there, so the session ends with a call and no result.
 */
import { Type } from "typebox";
import { Agent } from "../../src/agent/agent.js";
import { assistantMessage } from "../../src/messages.js";
import { ScriptedModel } from "../../src/models/scripted-model.js";
import { SessionFile } from "../../src/session/session.js";

const [file] = process.argv.slice(2);
if (file === undefined) throw new Error("usage: interrupted-tool-child <session file>");
const session = await SessionFile.create(file, { cwd: process.cwd() });
const model = new ScriptedModel([
  assistantMessage([{ type: "toolCall", id: "call_wait", name: "wait", arguments: { seconds: 60 } }], "toolUse"),
]);
const agent = new Agent({
  session,
  initialState: {
    model,
    tools: [
      {
        name: "wait",
        label: "wait",
        description: "waits",
        parameters: Type.Object({ seconds: Type.Number() }),
        execute: () =>
          new Promise(() => {
            process.stdout.write("tool started\n");
            setInterval(() => undefined, 1_000);
          }),
      },
    ],
  },
});
await agent.prompt("wait for me");
process.stderr.write("the tool returned, but it never should\n");
process.exit(1);
