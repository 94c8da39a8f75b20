/**
 * The house's numbers, as issue reviews quote them: chapter regions (all, in `cli/`, and of chapters
 * 12–19 inside core-layer files), the longest functions and files of `src/`, the lines of the loop
 * and its tool batch, and the error classes with their base.
 *
 *   npx tsx scripts/house-metrics.ts
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

const SRC = path.join(import.meta.dirname, "..", "packages", "pi-course", "src");
const CORE = /^(?:[^/]+\.ts|agent\/|session\/|models\/|coding-tools\/)/;
/** The loop and its tool batch: the core that calls user code under its contracts. */
const LOOP = ["agent/agent-loop.ts", "agent/loop-run.ts", "agent/tool-execution.ts"];
/** The guards that keep those contracts for user code that breaks them (until 2026-12-04 counted with the loop). */
const GUARDS = ["agent/guards.ts", "agent/settle.ts"];

const files = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : [],
  );

const all = files(SRC).map((file) => ({ rel: path.relative(SRC, file), text: readFileSync(file, "utf8") }));
const regionsOf = (text: string, chapters = /\d+/) =>
  text.split("\n").filter((l) => new RegExp(`^\\s*// #region ch(${chapters.source})\\s*$`).test(l)).length;

const late = /1[2-9]/;
console.log(`chapter regions: ${all.reduce((n, f) => n + regionsOf(f.text), 0)} in all`);
console.log(`  in cli/: ${all.filter((f) => f.rel.startsWith("cli/")).reduce((n, f) => n + regionsOf(f.text), 0)}`);
const core = all.filter((f) => CORE.test(f.rel) && f.rel !== "index.ts");
console.log(`  of chapters 12-19 in core-layer files: ${core.reduce((n, f) => n + regionsOf(f.text, late), 0)}`);
for (const f of core) if (regionsOf(f.text, late) > 0) console.log(`    ${f.rel}: ${regionsOf(f.text, late)}`);

const functions: { name: string; lines: number }[] = [];
for (const f of all) {
  const source = ts.createSourceFile(f.rel, f.text, ts.ScriptTarget.Latest, true);
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const named =
        (node as ts.FunctionDeclaration).name?.getText() ??
        (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText() : "(anonymous)");
      functions.push({ name: `${f.rel}:${start + 1} ${named}`, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
functions.sort((a, b) => b.lines - a.lines);
console.log(`functions over 100 lines: ${functions.filter((f) => f.lines > 100).length}`);
for (const f of functions.slice(0, 8)) console.log(`  ${f.lines} ${f.name}`);
const lengths = all.map((f) => ({ rel: f.rel, lines: f.text.split("\n").length - (f.text.endsWith("\n") ? 1 : 0) }));
lengths.sort((a, b) => b.lines - a.lines);
console.log("longest files:");
for (const f of lengths.slice(0, 8)) console.log(`  ${f.lines} ${f.rel}`);
const loop = lengths.filter((f) => LOOP.includes(f.rel));
console.log(
  `loop + tool batch: ${loop.reduce((n, f) => n + f.lines, 0)} lines (${loop.map((f) => `${f.rel} ${f.lines}`).join(", ")})`,
);
const guards = lengths.filter((f) => GUARDS.includes(f.rel));
console.log(
  `guards at the edge: ${guards.reduce((n, f) => n + f.lines, 0)} lines (${guards.map((f) => `${f.rel} ${f.lines}`).join(", ")})`,
);
const classes = all.flatMap((f) =>
  [...f.text.matchAll(/class (\w+) extends (\w+Error|Error)\b/g)].map((m) => `${m[1]} < ${m[2]}`),
);
console.log(`error classes: ${classes.length}: ${classes.join(", ")}`);
