/**
 * Learner-facing text: LEARNING.md for a generated folder and the chapter card printed by
 * `npm run checkpoint`. Chinese first, with a short English line.
 */
import type { Chapter, Text } from "./catalogue.js";
import type { View } from "./view.js";
import { notImplementedMessage, pad, type ChapterRegion, type LabRegion } from "./markers.js";

/** A lab with the places (file and symbol) its regions mark. */
interface LabPlaces {
  id: string;
  title: Text;
  hint?: Text;
  places: { file: string; symbols: string[] }[];
}

/** Package-relative form of a scanned file label. */
function local(file: string): string {
  return file.replace(/^packages\/pi-course\//, "");
}

function places(chapter: Chapter, labs: LabRegion[]): LabPlaces[] {
  return chapter.labs.map((spec) => {
    const byFile = new Map<string, string[]>();
    for (const region of labs.filter((l) => l.lab === spec.id)) {
      const file = local(region.file);
      const symbols = byFile.get(file) ?? [];
      if (!symbols.includes(region.symbol)) symbols.push(region.symbol);
      byFile.set(file, symbols);
    }
    return {
      id: spec.id,
      title: spec.title,
      ...(spec.hint && { hint: spec.hint }),
      places: [...byFile].map(([file, symbols]) => ({ file, symbols })),
    };
  });
}

/**
 * The one `-t` pattern the course prints for a lab, e.g. `Lab 3\.1\b`. vitest's `-t` is a
 * regular expression matched anywhere in a test's full name: `\.` is a literal dot and `\b`
 * ends the id, so it matches neither `Lab 3x1` nor `Lab 3.10`.
 */
export function labPattern(id: string): string {
  return `Lab ${id.replace(".", "\\.")}\\b`;
}

/**
 * The fast way to run one lab's tests in a practice folder: the chapter's test files (`test/NN-`,
 * a path filter) and the lab's `-t` pattern together, without the typecheck. Seconds, where
 * `npm test -- -t …` typechecks and imports every earlier chapter's test files first (minutes).
 */
export function focusedCommand(chapterId: string, labId: string): string {
  return `npx vitest run test/${chapterId}- -t "${labPattern(labId)}"`;
}

/** Said beside every focused command: vitest lists only failing tests unless asked. */
export const VERBOSE_NOTE: Text = {
  zh: "加上 `--reporter=verbose` 可以看到每个通过的测试的名字（默认只列出失败的）。",
  en: "Add --reporter=verbose to list the passing tests too (by default only failures are named).",
};

function where(lab: LabPlaces): string {
  return lab.places.map((p) => `\`${p.file}\`: ${p.symbols.map((s) => `\`${s}\``).join(", ")}`).join("; ");
}

function bilingual(text: Text): string {
  return `${text.zh}\n\n*${text.en}*`;
}

/**
 * The construction-site errors the first test of the first lab may fail with first: one message
 * when it is known (the lab has one region, or the first `Lab N.1` test in `testSource` calls one
 * of the lab's symbols by name before any other), else every region of the first lab. The proof
 * checks the prediction against what that test really fails with in practice(N).
 */
export function firstRed(chapter: Chapter, labs: LabRegion[], testSource?: string): string[] {
  const first = chapter.labs[0];
  const mine = first ? labs.filter((l) => l.lab === first.id) : [];
  const messages = (regions: LabRegion[]) => [...new Set(regions.map((r) => notImplementedMessage(r.lab, r.symbol)))];
  const body = testSource === undefined || !first ? undefined : firstTestText(testSource, first.id);
  if (body === undefined || messages(mine).length <= 1) return messages(mine);
  // Where the test first calls a symbol: directly, or inside a helper of the test file it calls
  // (one level: `decodeAll(…)` whose body calls `decoder.push(…)` counts at the helper's call).
  const helpers = localHelpers(testSource!, body);
  const at = (symbol: string) => {
    // A call: `.push(` for a method `SseDecoder.push`; `textOf(` or `ws.resolve(` for `textOf`, `resolve`.
    const parts = symbol.replace(/[[\]]/g, "").split(".");
    const name = parts.pop()!.replace(/\$/g, "\\$");
    const re = parts.length > 0 ? new RegExp(`\\.${name}\\s*\\(`) : new RegExp(`(?<![\\w$])${name}\\s*\\(`);
    let best = re.exec(body)?.index ?? Infinity;
    for (const helper of helpers) {
      const inner = re.exec(helper.text)?.index;
      if (inner !== undefined) best = Math.min(best, helper.at + inner / 1e6);
    }
    return best;
  };
  const named = [...mine].sort((a, b) => at(a.symbol) - at(b.symbol))[0]!;
  return at(named.symbol) === Infinity ? messages(mine) : messages([named]);
}

/** Functions of the test file that `body` calls: where it first calls each, and the function's text. */
function localHelpers(source: string, body: string): { at: number; text: string }[] {
  const out: { at: number; text: string }[] = [];
  for (const m of source.matchAll(
    /^(?:async\s+)?function\s+([\w$]+)\s*[<(]|^const\s+([\w$]+)\s*=\s*(?:async\s*)?\(/gm,
  )) {
    const name = (m[1] ?? m[2])!;
    const call = new RegExp(`(?<![\\w$.])${name.replace(/\$/g, "\\$")}\\s*[<(]`).exec(body);
    if (!call) continue;
    const end = source.indexOf("\n}", m.index);
    out.push({ at: call.index, text: source.slice(m.index, end < 0 ? undefined : end) });
  }
  return out;
}

/** The text of the first test named `Lab <id> …` in a test file, up to the next test. */
function firstTestText(source: string, id: string): string | undefined {
  const start = new RegExp(`["'\`]Lab ${id.replace(".", "\\.")}\\b`).exec(source);
  if (!start) return undefined;
  const rest = source.slice(start.index);
  const end = /\n\s*(?:it|test)(?:\.\w+)*\s*\(/.exec(rest.slice(1));
  return end ? rest.slice(0, end.index + 1) : rest;
}

/** LEARNING.md of a generated folder. */
export function renderLearning(chapter: Chapter, labs: LabRegion[], view: View): string {
  return chapter.mode === "observe" ? observeLearning(chapter, view) : rebuildLearning(chapter, labs, view);
}

function header(chapter: Chapter): string[] {
  return [`# 第 ${chapter.id} 章 · ${chapter.title.zh}`, "", `*Chapter ${chapter.id}: ${chapter.title.en}*`, ""];
}

function commandsBlock(lines: [string, string][]): string[] {
  const width = Math.max(...lines.map(([c]) => c.length));
  return ["```sh", ...lines.map(([c, note]) => `${c.padEnd(width)}   # ${note}`), "```"];
}

function firstRedBlock(messages: string[]): string[] {
  if (messages.length <= 1)
    return ["```", `Error: ${messages[0] ?? "Lab N.M …：尚未实现 (not implemented yet)"}`, "```"];
  return ["（以下之一 · one of these）", "", "```", ...messages.map((m) => `Error: ${m}`), "```"];
}

function testText(view: View): string | undefined {
  const text = view.files.get(view.chapter.testFile);
  return typeof text === "string" ? text : undefined;
}

function rebuildLearning(chapter: Chapter, labs: LabRegion[], view: View): string {
  const earlier = view.included.filter((c) => c.number < chapter.number && c.mode === "rebuild");
  const laid = places(chapter, labs);
  const firstLab = chapter.labs[0]!.id;
  const out = [...header(chapter)];
  if (view.kind === "practice") {
    out.push(
      "> 模式：**重建 (rebuild)**。本章的实验 (lab) 由你来写：每个实验的函数体已被替换为“施工现场”，",
      "> 它会抛出 `Lab N.M 符号：尚未实现` 的错误。签名和类型都在，文件夹可以通过类型检查。",
      ">",
      "> *Mode: rebuild. You write this chapter's labs; each lab body is a construction site that throws.*",
    );
  } else {
    out.push(
      "> 模式：**快照 (snapshot)**。这是第 " + chapter.id + " 章结束时的完整参考代码，所有测试都应通过。",
      ">",
      "> *Mode: snapshot. The reference code as it stands at the end of this chapter; every test passes.*",
    );
  }
  out.push("", "## 本章新增 · What this chapter adds", "", bilingual(chapter.adds), "");
  out.push("## 不变式 · Invariant", "", `> ${chapter.invariant.zh}`, ">", `> *${chapter.invariant.en}*`, "");
  out.push("## 实验 · Labs", "");
  laid.forEach((lab, i) => {
    out.push(`${i + 1}. **Lab ${lab.id} · ${lab.title.zh}** (*${lab.title.en}*) — ${where(lab)}`);
    if (lab.hint) {
      // A hint of many requirements is written as lines ("1. …"): each becomes an item of a list
      // under the hint, the Chinese list then the English one.
      const nested = (text: string) => text.replaceAll("\n", "\n     ");
      if (lab.hint.zh.includes("\n") || lab.hint.en.includes("\n"))
        out.push(
          `   - 提示：${nested(lab.hint.zh)}`,
          `   - *Hint: ${nested(lab.hint.en).replaceAll("\n     ", "*\n     *")}*`,
        );
      else out.push(`   - 提示：${lab.hint.zh} *(${lab.hint.en})*`);
    }
    const spec = chapter.labs.find((l) => l.id === lab.id);
    if (spec?.says && spec.says.length > 0) {
      out.push("   - 测试逐字检查的文字 (exact texts the tests check):");
      for (const text of spec.says) out.push(`     - \`${text.replaceAll("`", "'")}\``);
    }
    if (spec?.uses && spec.uses.length > 0) {
      const need = spec.uses.map((u) => `Lab ${u}`).join("、");
      out.push(
        `   - 依赖：这个实验的测试也会用到 ${need}；${need} 没写完时，它们先失败在 ${need} 的施工现场。` +
          ` *(These tests need ${spec.uses.map((u) => `Lab ${u}`).join(" and ")} too: until ${spec.uses.length > 1 ? "those are" : "that is"} written, they fail first at ${spec.uses.length > 1 ? "their" : "its"} construction site.)*`,
      );
    }
    out.push(`   - 只跑这个实验 (run just this lab): \`${focusedCommand(chapter.id, lab.id)}\``);
  });
  out.push("");
  out.push("## 第一个红灯 · The first red", "");
  const earlierIds = earlier.map((c) => c.id).join("、");
  // Every test file of the chapter (`test/NN-…`), not only the focused one: all of them are red.
  const own = [...view.files.keys()]
    .filter((f) => f.startsWith(`test/${chapter.id}-`) && f.endsWith(".test.ts"))
    .sort((a, b) => Number(b === chapter.testFile) - Number(a === chapter.testFile) || a.localeCompare(b));
  const ownFiles = (own.length > 0 ? own : [chapter.testFile]).map((f) => `\`${f}\``).join("、");
  out.push(
    earlier.length > 0
      ? `运行 \`npm test\`：前面章节（${earlierIds}）的测试应全部通过，本章的测试 ${ownFiles} 全部失败，` +
          `而且是因为施工现场的错误。Lab ${firstLab} 的第一个测试失败于 (the first test of Lab ${firstLab} fails with)：`
      : `运行 \`npm test\`：本章的测试 ${ownFiles} 全部失败，而且是因为施工现场的错误。` +
          `Lab ${firstLab} 的第一个测试失败于 (the first test of Lab ${firstLab} fails with)：`,
    "",
    ...firstRedBlock(firstRed(chapter, labs, testText(view))),
    "",
    "*Run `npm test`: earlier chapters are green, this chapter's tests are red with the construction-site " +
      "error. Implement the labs in order until everything is green.*",
    "",
  );
  const gaps: string[] = [];
  for (let n = earlier[0]?.number ?? chapter.number; n < chapter.number; n++) {
    if (!view.included.some((c) => c.number === n)) gaps.push(pad(n));
  }
  if (gaps.length > 0) {
    out.push(
      `第 ${gaps.join("、")} 章还没有加入课程，所以这里没有它的代码和测试；本章不依赖它。` +
        `*Chapter ${gaps.join(", ")} is not in the course yet, so this folder has none of its code or tests; this chapter does not need it.*`,
      "",
    );
  }
  if (earlier.length > 0) {
    out.push(
      `文件夹里前面章节（${earlierIds}）的代码就是那几章的参考答案：卡住时可以去读，本章也建立在它之上。`,
      "",
      `*The code of the earlier chapters (${earlier.map((c) => c.id).join(", ")}) in this folder is their reference solution.*`,
      "",
    );
  }
  const pattern = labPattern(firstLab);
  out.push("## 命令 · Commands", "");
  out.push(
    ...commandsBlock([
      ["npm install", "安装依赖 (install)"],
      [focusedCommand(chapter.id, firstLab), "只跑一个实验：几秒钟 (one lab: seconds)"],
      [
        `${focusedCommand(chapter.id, firstLab)} --reporter=verbose`,
        "同上，并列出每个通过的测试 (the same, listing passing tests)",
      ],
      [`npx vitest run test/${chapter.id}-`, "只跑本章测试，不做类型检查 (this chapter's tests, no typecheck)"],
      ["npm test", "先类型检查，再跑全部测试：几分钟 (typecheck, then every chapter's tests: minutes)"],
      ["npm run typecheck", "只做类型检查 (typecheck only)"],
    ]),
    "",
    `\`test/${chapter.id}-\` 只选本章的测试文件，\`-t\` 再按名字选出一个实验：两者一起用才快（几秒）。` +
      `\`npm test -- -t …\` 要先做类型检查、再加载前面所有章节的测试文件，要一两分钟。` +
      `\`-t\` 的参数是正则表达式，匹配测试的完整名字：\`\\.\` 是字面上的点，\`\\b\` 让 \`${pattern}\` 不会匹配到 ` +
      `\`Lab ${firstLab}0\`。把 ${firstLab} 换成你正在做的实验。${VERBOSE_NOTE.zh}`,
    "",
    `*The path filter \`test/${chapter.id}-\` and \`-t\` together are what make a focused run fast (seconds); ` +
      `\`npm test -- -t …\` typechecks and loads every earlier chapter's test files first (a minute or two). ${VERBOSE_NOTE.en}*`,
    "",
    "`npm test` 先运行 `tsc --noEmit`，只要有一个类型错误，就一个测试都不跑：后面某个实验写到一半、类型还不对，" +
      "前面实验的测试也看不到了。这时用 `npx vitest run test/NN- -t …`：vitest 只去掉类型、不检查类型，测试照跑；" +
      "实验写完再跑 `npm test`，类型错误和 `expectTypeOf` 测试也算数。",
    "",
    "*-t takes a regular expression matched against the full test name. `npm test` typechecks first, and one type error " +
      "(say, in a half-written later lab) stops every lab's tests; `npx vitest run test/NN- -t …` runs them without the typecheck. " +
      "Finish with `npm test`.*",
    "",
  );
  out.push("## 故意弄坏 · Break it on purpose", "", bilingual(chapter.breakIt), "");
  if (chapter.next !== undefined) out.push("## 再往前 · Where this goes", "", bilingual(chapter.next), "");
  return out.join("\n");
}

function observeLearning(chapter: Chapter, view: View): string {
  const out = [...header(chapter)];
  out.push(
    "> 模式：**观察 (observe)**。本章不写代码：这里是完整的参考库。先运行，预测会发生什么，再故意弄坏它。",
    ">",
    "> *Mode: observe. No code to write: this folder holds the finished library. Run it, predict, break it.*",
    "",
  );
  out.push("## 你将看到 · What you will see", "", bilingual(chapter.adds), "");
  out.push("## 不变式 · Invariant", "", `> ${chapter.invariant.zh}`, ">", `> *${chapter.invariant.en}*`, "");
  out.push("## 先预测，再运行 · Predict, then run", "");
  (chapter.observe ?? []).forEach((step, i) => {
    out.push(`${i + 1}. \`${step.command}\``, "", `   ${step.text.zh}`, "", `   *${step.text.en}*`, "");
  });
  const chapters = view.included.filter((c) => c.mode === "rebuild").map((c) => c.id);
  out.push("## 命令 · Commands", "");
  out.push(
    ...commandsBlock([
      ["npm install", "安装依赖 (install)"],
      ...(chapter.scripts?.start
        ? ([["npm start", "运行一次完整的智能体 (one full agent run)"]] as [string, string][])
        : []),
      ["npm test", "全部测试都应通过 (every test passes)"],
      ...chapters
        .slice(0, 1)
        .map((id): [string, string] => [`npx vitest run test/${id}-`, "某一章的测试 (one chapter's tests)"]),
    ]),
    "",
    `${VERBOSE_NOTE.zh} *${VERBOSE_NOTE.en}*`,
    "",
  );
  if (chapters.length > 0) {
    out.push(
      `本文件夹包含第 ${chapters.join("、")} 章的代码与测试。*This folder holds chapters ${chapters.join(", ")}.*`,
      "",
    );
  }
  out.push("## 故意弄坏 · Break it on purpose", "", bilingual(chapter.breakIt), "");
  if (chapter.next !== undefined) out.push("## 再往前 · Where this goes", "", bilingual(chapter.next), "");
  return out.join("\n");
}

/** The chapter card printed by `npm run checkpoint -- NN`. */
export function renderCard(chapter: Chapter, labs: LabRegion[], regions: ChapterRegion[]): string {
  const mode = chapter.mode === "observe" ? "观察 observe" : "重建 rebuild";
  const regionFiles = [...new Set(regions.filter((r) => r.chapter === chapter.number).map((r) => local(r.file)))];
  const out = [
    `第 ${chapter.id} 章 · ${chapter.title.zh} — Chapter ${chapter.id}: ${chapter.title.en}   [${mode}]`,
    "",
    `不变式 Invariant: ${chapter.invariant.zh}`,
    `                  ${chapter.invariant.en}`,
    "",
    `文件 Files (packages/pi-course): ${chapter.files.length > 0 ? chapter.files.join(", ") : "—"}`,
  ];
  if (regionFiles.length > 0)
    out.push(`区域 Regions (// #region ch${pad(chapter.number)}) in: ${regionFiles.join(", ")}`);
  if (chapter.labs.length > 0) {
    out.push("", "实验 Labs:");
    for (const lab of places(chapter, labs)) {
      out.push(`  Lab ${lab.id} · ${lab.title.zh} (${lab.title.en})`, `      ${where(lab).replaceAll("`", "")}`);
    }
  }
  out.push(
    "",
    `测试 Focused test: packages/pi-course/${chapter.testFile}`,
    "",
    "命令 Commands:",
    `  npx vitest run packages/pi-course/test/${chapter.id}-    # 本章测试 (this chapter's tests, reference code)`,
  );
  if (chapter.labs[0]) {
    out.push(
      `  npx vitest run packages/pi-course/test/${chapter.id}- -t "${labPattern(chapter.labs[0].id)}"    # 一个实验 (one lab)`,
    );
  }
  out.push(
    `  npm run -s practice -- ${chapter.id} ../my-${chapter.id}    # 生成练习文件夹 (make the practice folder)`,
    `  cd ../my-${chapter.id} && npm install && ${chapter.scripts?.start ? "npm start && " : ""}npm test`,
  );
  if (chapter.labs.length > 0) {
    out.push("", "在练习文件夹里只跑一个实验 (one lab, in the practice folder; seconds):");
    for (const lab of chapter.labs) out.push(`  ${focusedCommand(chapter.id, lab.id)}`);
    out.push(`  ${VERBOSE_NOTE.zh}`, `  ${VERBOSE_NOTE.en}`);
  }
  return out.join("\n");
}
