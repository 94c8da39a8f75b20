/**
 * The child of durable.hooks.test.ts: an `Agent` with a session, a run journal and a
 * `beforeToolCall` that blocks `reveal`, whose one turn calls `hang` and `reveal` in one parallel
 * batch. `node --import tsx blocked-call-child.ts <session file> <effects file>` prints `hanging`
 * once `hang` runs (the blocked call was decided before it); the parent kills it there (SIGKILL).
 */
import { Type } from "typebox";
import { Agent } from "../../src/agent/agent.js";
import { defineTool } from "../../src/agent/tools.js";
import { RunJournal } from "../../src/durable/journal.js";
import { SessionFile } from "../../src/session/session.js";
import { blockReveal, secretTools } from "./blocked-call-script.js";
import { call, says, scripted, turn } from "./messages.js";

const [file, effects] = process.argv.slice(2);
if (file === undefined || effects === undefined)
  throw new Error("usage: blocked-call-child <session file> <effects file>");
const session = await SessionFile.create(file, { cwd: process.cwd() });
const journal = new RunJournal({ store: () => session });
const hang = defineTool({
  name: "hang",
  label: "hang",
  description: "Runs until the process is killed.",
  parameters: Type.Object({}),
  execute: async () => {
    process.stdout.write("hanging\n");
    return new Promise<never>(() => setInterval(() => {}, 1000));
  },
});
const agent = new Agent({
  session,
  beforeToolCall: blockReveal,
  initialState: {
    model: scripted([turn([call("c1", "hang"), call("c2", "reveal")]), says("done")]),
    tools: journal.tools([hang, ...secretTools(effects)]),
  },
});
agent.subscribe(journal.listener);
await agent.prompt("look around");
