/**
 * `npm run practice -- NN [folder]` and `npm run checkpoint -- [NN]`.
 *
 * Run through npm, from the root or with `-w @pi/course` (the workspace script runs with the
 * package as its cwd, so a relative folder is resolved against INIT_CWD, the directory the
 * learner ran npm from).
 */
import { existsSync, readdirSync, realpathSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { loadCatalogue, REPO_ROOT, UsageError, type Catalogue } from "./catalogue.js";
import { buildView, defaultTarget, fileOwners, labsOf, REPO_SOURCES, scanSources, writeView } from "./generate.js";
import { firstRed, focusedCommand, renderCard } from "./learning.js";

/** The real path of `path`, resolving symlinks in the part that exists. */
function realish(path: string): string {
  let existing = path;
  const rest: string[] = [];
  while (!existsSync(existing)) {
    const parent = dirname(existing);
    if (parent === existing) break;
    rest.unshift(existing.slice(parent.length).replace(/^[\\/]/, ""));
    existing = parent;
  }
  return join(realpathSync(existing), ...rest);
}

function inside(path: string, folder: string): boolean {
  const rel = relative(folder, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** Where the folder goes; refuses an existing path and any folder inside the repository. */
export function resolveTarget(arg: string | undefined, chapterId: string, catalogue: Catalogue, cwd: string): string {
  const target = arg === undefined ? defaultTarget(catalogue.get(chapterId)) : resolve(cwd, arg);
  if (existsSync(target)) {
    throw new UsageError(
      `${target} 已存在 (already exists). 练习文件夹不会覆盖任何东西 (a practice folder never overwrites ` +
        "anything): pick a new folder, or remove this one yourself.",
    );
  }
  if (inside(realish(target), realish(REPO_ROOT))) {
    throw new UsageError(
      `${target} 在本仓库里面 (is inside the repository ${REPO_ROOT}); it would become an untracked folder ` +
        `of the course itself. 请放在仓库之外 (put it outside), e.g. ../my-${chapterId} beside the repository.`,
    );
  }
  return target;
}

/** How to `cd` to the folder from `cwd`: relative when it is inside cwd's tree, else absolute. */
export function cdPath(target: string, cwd: string): string {
  const shown = relative(cwd, target);
  return inside(target, cwd) && shown !== "" ? `.${sep}${shown}` : target;
}

/** Library sources and tests that no chapter owns (so no view holds them), for maintainers. */
function unownedFiles(catalogue: Catalogue): string[] {
  const owners = fileOwners(catalogue, REPO_SOURCES);
  const all = (dir: string) =>
    readdirSync(join(REPO_SOURCES.packageDir, dir), { recursive: true })
      .map((f) => `${dir}/${String(f).replaceAll("\\", "/")}`)
      .filter((f) => f.endsWith(".ts"));
  return [...all("src"), ...all("kit"), ...all("test").filter((f) => !f.includes("/fixtures/"))]
    .filter((f) => !owners.has(f))
    .sort();
}

const USAGE = [
  "用法 Usage:",
  "  npm run -s practice -- NN [folder]     生成第 NN 章的练习文件夹 (default ../pi-practice-NN)",
  "  npm run -s checkpoint -- [NN]          打印章节卡片 (print the chapter card)",
].join("\n");

async function practice(args: string[], cwd: string): Promise<void> {
  const catalogue = await loadCatalogue();
  const [chapterArg, folderArg, ...extra] = args;
  if (chapterArg === undefined || extra.length > 0) {
    const valid = catalogue.chapters.map((c) => c.id).join(", ");
    throw new UsageError(`${USAGE}\n\nValid chapters: ${valid}.`);
  }
  const chapter = catalogue.get(chapterArg);
  const target = resolveTarget(folderArg, chapter.id, catalogue, cwd);
  const view = buildView(catalogue, chapter, "practice");
  writeView(view, target);
  const folder = cdPath(target, cwd);
  const out = [
    `已生成第 ${chapter.id} 章「${chapter.title.zh}」的练习文件夹 (chapter ${chapter.id} practice folder): ${target}`,
    "",
    `  cd ${folder}`,
    "  npm install",
  ];
  if (chapter.mode === "observe") {
    if (chapter.scripts?.start) out.push("  npm start");
    out.push("  npm test");
  } else {
    out.push(
      "  npm test                    # 前面的章节绿，本章红 (earlier chapters green, this chapter red)",
      `  ${focusedCommand(chapter.id, chapter.labs[0]!.id)}    # 一个实验，几秒钟 (one lab, in seconds)`,
    );
    const scan = scanSources(catalogue);
    const test = view.files.get(chapter.testFile);
    const red = firstRed(chapter, labsOf(chapter, scan), typeof test === "string" ? test : undefined);
    if (red.length === 1) out.push("", `第一个红灯 (first red): ${red[0]}`);
    else if (red.length > 1) out.push("", `第一个红灯，以下之一 (first red, one of):`, ...red.map((m) => `  ${m}`));
  }
  out.push("", "然后阅读 LEARNING.md (then read LEARNING.md).");
  if (view.missingTests.length > 0) {
    out.push("", `注意 (note): these tests do not exist yet and were left out: ${view.missingTests.join(", ")}`);
  }
  console.log(out.join("\n"));
}

async function checkpoint(args: string[]): Promise<void> {
  const catalogue = await loadCatalogue();
  if (args.length > 1) throw new UsageError(USAGE);
  if (args.length === 0) {
    console.log("章节 Chapters:");
    for (const c of catalogue.chapters) {
      console.log(`  ${c.id}  ${c.title.zh} — ${c.title.en}${c.mode === "observe" ? "  [observe]" : ""}`);
    }
    const unowned = unownedFiles(catalogue);
    if (unowned.length > 0) {
      console.log(
        `\n不属于任何章节、不会出现在任何练习文件夹里的文件 (files in no chapter view):\n  ${unowned.join("\n  ")}`,
      );
    }
    console.log("\nnpm run checkpoint -- NN   打印一章的卡片 (print one chapter's card)");
    return;
  }
  const chapter = catalogue.get(args[0]!);
  const scan = scanSources(catalogue);
  console.log(renderCard(chapter, labsOf(chapter, scan), scan.regions));
}

async function main(): Promise<void> {
  const [command, ...args] = process.argv.slice(2);
  const cwd = process.env.INIT_CWD ?? process.cwd();
  try {
    if (command === "practice") await practice(args, cwd);
    else if (command === "checkpoint") await checkpoint(args);
    else throw new UsageError(USAGE);
  } catch (error) {
    // Named after the command the person ran. A refusal is the last line this prints; npm adds
    // its own "npm error" lines after any failing script (`npm run -s …` leaves them out). The
    // exit code stays non-zero: `npm run practice -- 03 x && cd x` must not go on.
    const prefix = command === "checkpoint" ? "checkpoint" : "practice";
    if (error instanceof UsageError) {
      console.error(`${prefix}: ${error.message}`);
      process.exitCode = 2;
    } else {
      const what = command === "practice" ? "失败 (failed), nothing was written" : "失败 (failed)";
      console.error(`${prefix}: ${what}:\n${error instanceof Error ? error.stack : String(error)}`);
      process.exitCode = 1;
    }
  }
}

if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(new URL(import.meta.url).pathname)) {
  await main();
}
