/**
 * The child of the chapter 10 crash test: appends to a session file until it is killed.
 *
 * `node session-crash-child.js <file> <durable 0|1> <budget bytes>`: opens the file (or creates
 * it), prints `ready`, then appends entries of random sizes (mostly small, some of 32 KB–4 MB so
 * that a SIGKILL can land in the middle of a write), up to three at a time, each the child of a
 * random written entry. After each append resolves it prints the id: the parent then knows that
 * line was written before the kill. Once `budget` bytes are appended it waits to be killed.
 * Any error is printed on stderr and ends the child with code 1 (the parent reports it).
 */
import { existsSync } from "node:fs";
import { SessionFile } from "../../src/session/session.js";

const [file, durableFlag, budgetText] = process.argv.slice(2);
if (file === undefined) throw new Error("usage: session-crash-child <file> <durable 0|1> <budget bytes>");

async function main(): Promise<void> {
  const options = { durable: durableFlag === "1" };
  const session = existsSync(file!)
    ? await SessionFile.open(file!, options)
    : await SessionFile.create(file!, { cwd: process.cwd() }, options);
  const ids = session.entries().map((entry) => entry.id);
  process.stdout.write("ready\n");
  let budget = Number(budgetText ?? 1_000_000);
  while (budget > 0) {
    const batch = 1 + Math.floor(Math.random() * 3);
    const appends: Promise<string>[] = [];
    for (let i = 0; i < batch; i++) {
      const dice = Math.random();
      const size =
        dice < 0.1
          ? 1_048_576 + Math.floor(Math.random() * 3_145_728)
          : dice < 0.25
            ? 32_768 + Math.floor(Math.random() * 491_520)
            : 20 + Math.floor(Math.random() * 400);
      budget -= size;
      const parentId = ids.length === 0 || Math.random() < 0.05 ? null : ids[Math.floor(Math.random() * ids.length)]!;
      const text = "x".repeat(size);
      appends.push(
        session
          .append({
            type: "message",
            parentId,
            message: { role: "user", content: [{ type: "text", text }], timestamp: Date.now() },
          })
          .then((id) => {
            process.stdout.write(id + "\n");
            ids.push(id);
            return id;
          }),
      );
    }
    await Promise.all(appends);
  }
  // Stay alive until the parent's SIGKILL: a child that exits by itself is a failure.
  setInterval(() => undefined, 1_000);
}

main().catch((error: unknown) => {
  process.stderr.write(`crash child failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
