/**
 * `npm run mutants -- NN`: the lines Stryker may change are exactly a chapter's lab bodies, the
 * tests it runs are the chapter's own, and the report's mutants are counted per lab. (Stryker's
 * own run is minutes long; the scores it gave are in the notes, not asserted here.)
 */
import { expect, it } from "vitest";
import { chapterTargets, labRanges, scoreOf, scoresOf } from "../mutants.js";

it("a lab's ranges are the lines between its marker and the #endregion that closes it, without a later chapter's nested lines", () => {
  const source = [
    "function f() {", // 1
    "  // #region lab 3.1 f", // 2
    "  const a = 1;", // 3
    "  // #region ch05", // 4
    "  const b = 2;", // 5
    "  // #endregion", // 6
    "  return a;", // 7
    "  // #endregion", // 8
    "}", // 9
  ].join("\n");
  const lab = { lab: "3.1", chapter: 3, symbol: "f", file: "packages/pi-course/src/f.ts", line: 2, body: [] };
  expect(labRanges(lab, source)).toEqual([
    { lab: "3.1", symbol: "f", file: lab.file, from: 3, to: 3 },
    { lab: "3.1", symbol: "f", file: lab.file, from: 7, to: 7 },
  ]);
  expect(() => labRanges(lab, source.replace(/ {2}\/\/ #endregion\n\}$/, "}"))).toThrow(/no matching \/\/ #endregion/);
});

it("chapter 02's targets: its lab bodies in event-stream.ts, and its own test file", async () => {
  const { ranges, testFiles } = await chapterTargets("02");
  expect([...new Set(ranges.map((range) => `${range.lab} ${range.symbol}`))]).toEqual([
    "2.1 push",
    "2.1 [Symbol.asyncIterator]",
    "2.1 next",
    "2.2 end",
  ]);
  expect(new Set(ranges.map((range) => range.file))).toEqual(new Set(["packages/pi-course/src/event-stream.ts"]));
  for (const range of ranges) expect(range.to).toBeGreaterThanOrEqual(range.from);
  expect(testFiles).toEqual(["packages/pi-course/test/02-event-stream.test.ts"]);
});

it("a report's mutants are counted per lab; a survivor names its line, what changed and into what", () => {
  // lab 1.2 is split in two by a later chapter's lines (line 6 is not its own)
  const ranges = [
    { lab: "1.1", symbol: "a", file: "src/x.ts", from: 2, to: 3 },
    { lab: "1.2", symbol: "b", file: "src/x.ts", from: 5, to: 5 },
    { lab: "1.2", symbol: "b", file: "src/x.ts", from: 7, to: 7 },
  ];
  const at = (line: number, start: number, end: number) => ({
    start: { line, column: start },
    end: { line, column: end },
  });
  const report = {
    files: {
      "src/x.ts": {
        source: "x\nif (a < b) go();\nreturn 1;\nx\nconst s = 'hi';\nlater();\nreturn s;\n",
        mutants: [
          {
            id: "1",
            mutatorName: "EqualityOperator",
            replacement: "a <= b",
            status: "Survived",
            location: at(2, 5, 10),
          },
          { id: "2", mutatorName: "BlockStatement", replacement: "{}", status: "Killed", location: at(3, 1, 10) },
          { id: "3", mutatorName: "StringLiteral", replacement: '""', status: "NoCoverage", location: at(5, 11, 15) },
          { id: "4", mutatorName: "StringLiteral", replacement: '""', status: "Timeout", location: at(5, 11, 15) },
          { id: "5", mutatorName: "StringLiteral", replacement: '""', status: "Survived", location: at(1, 1, 2) },
          { id: "6", mutatorName: "BlockStatement", replacement: "{}", status: "Survived", location: at(6, 1, 8) },
          { id: "7", mutatorName: "ReturnValue", replacement: "undefined", status: "Killed", location: at(7, 1, 9) },
        ],
      },
    },
  };
  const scores = scoresOf(report, ranges);
  expect(scores).toEqual([
    {
      lab: "1.1",
      symbol: "a",
      killed: 1,
      survived: 1,
      timeout: 0,
      noCoverage: 0,
      survivors: ["src/x.ts:2 EqualityOperator: a < b → a <= b"],
    },
    {
      lab: "1.2",
      symbol: "b",
      killed: 1,
      survived: 0,
      timeout: 1,
      noCoverage: 1,
      survivors: [`src/x.ts:5 StringLiteral: 'hi' → "" (no test ran it)`],
    },
  ]);
  expect(scores.map(scoreOf).map((score) => Math.round(score))).toEqual([50, 67]);
});
