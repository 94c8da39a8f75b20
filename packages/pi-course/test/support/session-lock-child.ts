/**
 * A second process for the one-writer test: `node session-lock-child.js <file> hold|try`.
 *
 * `hold`: opens the session file for writing, prints `holding <pid>`, and keeps it open until it
 * is killed. `try`: opens it, appends one entry, closes it and prints `appended <id>`; if the open
 * is refused it prints the error's name and message on one line and exits with code 3.
 */
import { SessionFile } from "../../src/session/session.js";

const [file, mode] = process.argv.slice(2);
if (file === undefined || (mode !== "hold" && mode !== "try"))
  throw new Error("usage: session-lock-child <file> hold|try");

async function main(): Promise<void> {
  let session: SessionFile;
  try {
    session = await SessionFile.open(file!);
  } catch (error) {
    process.stdout.write(`refused ${(error as Error).name}: ${(error as Error).message}\n`);
    process.exit(3);
  }
  if (mode === "hold") {
    process.stdout.write(`holding ${process.pid}\n`);
    setInterval(() => {}, 60_000);
    return;
  }
  const leaf = session.leaf?.id ?? null;
  const id = await session.append({
    type: "message",
    parentId: leaf,
    message: { role: "user", content: [{ type: "text", text: `from ${process.pid}` }], timestamp: 1 },
  });
  await session.close();
  process.stdout.write(`appended ${id}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack}\n`);
  process.exit(1);
});
