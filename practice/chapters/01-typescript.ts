import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "01",
  slug: "typescript",
  title: { zh: "TypeScript 求生包：带标签的联合、运行时边界、类型断言不是校验", en: "TypeScript survival kit" },
  invariant: {
    zh: "每种标签都有自己的分支，漏掉一个就编译不过；外面来的数据先逐字段检查，检查过的新对象才被信任。",
    en: "Every tag has its branch, and a forgotten one does not compile; data from outside is checked field by field, and only the new, checked object is trusted.",
  },
  adds: {
    zh:
      "整个课程的代码都靠三件事：带标签的联合（`type` 字段区分成员，`switch` 按它收窄），" +
      "`never` 做穷尽检查（`default` 分支把值交给参数类型是 `never` 的 `unreachable`：联合多了一个成员而你忘了写它的 `case`，编译器就在那里报错），" +
      "以及运行时边界：文件、服务器、工具参数给的都是 `unknown`，要逐字段检查，返回一个检查过的新对象。" +
      "最后一课：类型断言不是校验——`JSON.parse(text) as Settings` 能通过类型检查，编译器从此相信文件里的任何东西，错误在很远的地方才冒出来。" +
      "`value is T` 的类型谓词和 `asserts value is T` 的断言函数也是编译器无条件相信的承诺：函数体必须真的检查。" +
      "代码在 `kit/`（课程材料，不在库的 `src/` 里）：`tagged-union.ts` 和 `boundary.ts`。",
    en:
      "Three habits the whole course relies on: tagged unions narrowed by a switch on their tag, exhaustiveness with never " +
      "(the default branch calls unreachable(value: never), so a forgotten case does not compile), and a runtime boundary " +
      "that checks unknown data field by field into a new, trusted object. A type assertion is not validation: " +
      "JSON.parse(text) as Settings typechecks and the compiler then believes anything. Code: kit/ (course material, outside the library's src/).",
  },
  files: ["kit/tagged-union.ts", "kit/boundary.ts"],
  labs: [
    {
      id: "1.1",
      title: { zh: "穷尽的 switch（describeDelta、unreachable）", en: "an exhaustive switch" },
      hint: {
        zh:
          "`describeDelta`：`switch (delta.type)`，每个 `case` 里 `delta` 已经被收窄成那一个成员，可以直接读它的字段；" +
          '`default` 写 `return unreachable(delta, "delta")`。`unreachable`：参数类型是 `never`，运行时仍可能被调用（外面来的数据），' +
          '所以它要抛出 TypeError，不能返回。试试把 `case "error"` 删掉：编译器在哪一行报错？' +
          '（给 `Delta` 加一个没有 `case` 的成员 `{ type: "ping" }`，编译器在 `unreachable(delta, …)` 那一行说：' +
          "`Argument of type '{ type: \"ping\"; }' is not assignable to parameter of type 'never'`。）",
        en:
          'describeDelta: switch on delta.type; each case sees one member; default returns unreachable(delta, "delta"). ' +
          "unreachable must throw a TypeError: at run time it is reachable by data typed by assertion. A member without " +
          "its case is a compile error at the unreachable call: Argument of type '{ type: \"ping\"; }' is not assignable to parameter of type 'never'.",
      },
      says: [
        "text: ${JSON.stringify(text)}   /   tool call ${name} (${id})   /   done: ${reason}   /   error: ${message}",
        'unknown ${what} type ${JSON.stringify(value?.type)}   (a TypeError, e.g. unknown delta type "bogus"; null gives undefined)',
      ],
    },
    {
      id: "1.2",
      title: { zh: "运行时边界（parseSettings）", en: "the runtime boundary" },
      hint: {
        zh:
          "先确认是普通对象（不是 null、不是数组），再查有没有多余的键，然后逐个字段检查 `model`、`maxTokens`（可以没有）、`tools`（每一项）。" +
          "返回一个新对象，`tools` 要复制；没有 `maxTokens` 时结果里就不要有这个键。消息里描述值用已经写好的 `kindOf`。",
        en:
          "A plain object first, then unknown keys, then model, maxTokens (optional), tools (every item). Return a new " +
          "object with tools copied and no maxTokens key when there is none; name values with kindOf.",
      },
      says: [
        "settings must be an object, got ${kindOf(value)}",
        'settings has an unknown key "${key}"; the keys are model, maxTokens, tools',
        "settings.model must be a non-empty string, got ${JSON.stringify(model)}",
        "settings.maxTokens must be a positive integer, got ${JSON.stringify(maxTokens)}",
        "settings.tools must be an array of strings, got ${kindOf(tools)}",
        "settings.tools[${i}] must be a string, got ${kindOf(item)}",
        "kindOf (given) names a value: null, an array, object, undefined, else a ${typeof value} (a string, a number, …); so, e.g.: settings must be an object, got an array   /   " +
          "settings must be an object, got a string   /   settings.tools must be an array of strings, got a string   /   " +
          "settings.tools[1] must be a string, got a number",
      ],
    },
    {
      id: "1.3",
      title: { zh: "类型断言不是校验（loadSettings、assertSettings）", en: "an assertion is not validation" },
      hint: {
        zh:
          "`loadSettings`：`JSON.parse` 的结果是 `any`，先把它放进一个 `unknown` 变量，再交给 `parseSettings`；" +
          "`JSON.parse` 抛出的错误换成 SyntaxError，消息带上原来的原因。`assertSettings`：返回类型是 `asserts value is Settings`，" +
          "函数体必须真的检查（交给 `parseSettings`）——只写一个空函数体也能通过类型检查，这正是本实验要你记住的陷阱。",
        en:
          "loadSettings: put JSON.parse's any into an unknown, then parseSettings; rethrow a parse error as a SyntaxError " +
          "with its reason. assertSettings must really check (an empty body typechecks too: that is the trap).",
      },
      says: ["the settings are not JSON: ${error.message}   (a SyntaxError; error is JSON.parse's own)"],
    },
  ],
  wrong: [
    {
      lab: "1.1",
      what: 'break it, step 1: a member { type: "ping" } added to Delta, with no case for it',
      file: "kit/tagged-union.ts",
      find: '  | { type: "error"; message: string };',
      replace: '  | { type: "error"; message: string }\n  | { type: "ping" };',
      failsWith: "kit/tagged-union.ts does not typecheck",
    },
    {
      lab: "1.3",
      what: "break it, step 2: loadSettings returns JSON.parse(text) as Settings",
      file: "kit/boundary.ts",
      find:
        "  let parsed: unknown;\n" +
        "  try {\n" +
        "    parsed = JSON.parse(text);\n" +
        "  } catch (error) {\n" +
        "    throw new SyntaxError(`the settings are not JSON: ${(error as Error).message}`);\n" +
        "  }\n" +
        "  return parseSettings(parsed);",
      replace: "  return JSON.parse(text) as Settings;",
      failsWith: "loadSettings must check what JSON.parse gives it",
    },
    {
      lab: "1.1",
      what: "unreachable returns instead of throwing: an outside value falls through as undefined",
      file: "kit/tagged-union.ts",
      find: "  throw new TypeError(`unknown ${what} type ${JSON.stringify(type)}`);",
      replace: "  console.warn(`unknown ${what} type ${JSON.stringify(type)}`);\n  return undefined as never;",
      failsWith: "to throw",
    },
    {
      lab: "1.1",
      what: "unreachable reads value.type without a null check: null crashes with the wrong TypeError",
      file: "kit/tagged-union.ts",
      find: "  const type = (value as { type?: unknown } | null)?.type;",
      replace: "  const type = (value as { type?: unknown }).type;",
      failsWith: "unknown event type undefined",
    },
    {
      lab: "1.1",
      what: "describeDelta names a tool call by its id and its name swapped",
      file: "kit/tagged-union.ts",
      find: "      return `tool call ${delta.name} (${delta.id})`;",
      replace: "      return `tool call ${delta.id} (${delta.name})`;",
      failsWith: "tool call read (c1)",
    },
    {
      lab: "1.1",
      what: "unreachable ignores what it is told the value is and always says delta",
      file: "kit/tagged-union.ts",
      find: "  throw new TypeError(`unknown ${what} type ${JSON.stringify(type)}`);",
      replace: "  throw new TypeError(`unknown delta type ${JSON.stringify(type)}`);",
      failsWith: 'unknown event type "late"',
    },
    {
      lab: "1.2",
      what: "maxTokens checked with >= 0: a cap of zero tokens accepted",
      file: "kit/boundary.ts",
      find: "Number.isInteger(maxTokens) && maxTokens > 0)",
      replace: "Number.isInteger(maxTokens) && maxTokens >= 0)",
      failsWith: "settings.maxTokens must be a positive integer, got 0",
    },
    {
      lab: "1.2",
      what: "tools returned as the caller's own array, not a copy",
      file: "kit/boundary.ts",
      find: "tools: [...(tools as string[])] };",
      replace: "tools: tools as string[] };",
      failsWith: "bash",
    },
    {
      lab: "1.2",
      what: "maxTokens always set, undefined when absent: the key is there",
      file: "kit/boundary.ts",
      find: "  return { model, ...(maxTokens !== undefined && { maxTokens }), tools",
      replace: "  return { model, maxTokens: maxTokens as number | undefined, tools",
      failsWith: "maxTokens",
    },
    {
      lab: "1.2",
      what: "only the first tool checked, where every item was meant",
      file: "kit/boundary.ts",
      find: "  tools.forEach((item: unknown, i) => {",
      replace: "  tools.slice(0, 1).forEach((item: unknown, i) => {",
      failsWith: "settings.tools[1] must be a string, got a number",
    },
    {
      lab: "1.2",
      what: "unknown keys let through (a typo such as modle is silently ignored)",
      file: "kit/boundary.ts",
      find: "    if (!(SETTINGS_KEYS as readonly string[]).includes(key)) {",
      replace: '    if (key === "__proto__") {',
      failsWith: "settings has an unknown key",
    },
    {
      lab: "1.3",
      what: "assertSettings with an empty body: it typechecks and checks nothing",
      file: "kit/boundary.ts",
      find: "  parseSettings(value);\n",
      replace: "  void value;\n",
      failsWith: "to throw",
    },
    {
      lab: "1.3",
      what: "loadSettings drops JSON.parse's reason from its SyntaxError",
      file: "kit/boundary.ts",
      find: "    throw new SyntaxError(`the settings are not JSON: ${(error as Error).message}`);",
      replace: '    throw new SyntaxError("the settings are not JSON");',
      failsWith: "the settings are not JSON: ",
    },
    {
      lab: "1.3",
      what: "loadSettings's try also wraps parseSettings: a wrong field is reported as not JSON",
      file: "kit/boundary.ts",
      find: "    parsed = JSON.parse(text);\n  } catch (error) {",
      replace: "    return parseSettings(JSON.parse(text));\n  } catch (error) {",
      failsWith: "settings.model must be a non-empty string, got 3",
    },
  ],
  breakIt: {
    zh:
      '在 `Delta` 里加一个成员 `{ type: "ping" }`，运行 `npm run typecheck`：编译器指向哪一行？为什么是 `unreachable` 那一行，而不是 switch？' +
      "（Lab 1.1 的测试里也有一个会调用编译器，它同样会失败，并列出这一行。）" +
      '然后把 `loadSettings` 写成 `return JSON.parse(text) as Settings;`，运行 `npx vitest run test/01- -t "Lab 1\\\\.3\\\\b"`：类型检查通过了，哪个测试失败？',
    en:
      'Add a member { type: "ping" } to Delta and run npm run typecheck: which line does the compiler point at, and why ' +
      "there? (A Lab 1.1 test runs the compiler too, and lists that line.) Then make loadSettings return JSON.parse(text) as Settings: it typechecks; which Lab 1.3 test fails?",
  },
});
