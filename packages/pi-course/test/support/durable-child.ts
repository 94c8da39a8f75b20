/**
 * The child of chapter 19's crash test: an `Agent` with a session and a run journal, playing the
 * script of durable-script.ts. `node --import tsx durable-child.ts <session file> <effects file>`
 * prints `started` once the session exists, then runs; the parent kills it (SIGKILL) anywhere.
 */
import { Agent } from "../../src/agent/agent.js";
import { RunJournal } from "../../src/durable/journal.js";
import { fileStreamJournal, streamPathOf } from "../../src/durable/store.js";
import { SessionFile } from "../../src/session/session.js";
import { scriptModel, scriptTools } from "./durable-script.js";

const [file, effects] = process.argv.slice(2);
if (file === undefined || effects === undefined) throw new Error("usage: durable-child <session file> <effects file>");
const session = await SessionFile.create(file, { cwd: process.cwd() });
const journal = new RunJournal({ store: () => session, stream: () => fileStreamJournal(streamPathOf(file)) });
const agent = new Agent({
  session,
  initialState: { model: scriptModel(4), tools: journal.tools(scriptTools(effects)) },
});
agent.subscribe(journal.listener);
process.stdout.write("started\n");
await agent.prompt("run both effects");
process.stdout.write("finished\n");
await session.close();
