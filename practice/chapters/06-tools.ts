import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "06",
  slug: "tools",
  title: { zh: "工具：AgentTool 契约与 TypeBox 校验", en: "Tools: the AgentTool contract, validated with TypeBox" },
  invariant: {
    zh:
      "工具拿到的参数一定通过了它的 schema（只纠正表里列出的几种常见小错），并且是一份新对象；不合格的调用得到一条模型能读懂的错误：" +
      "逐个列出出错字段的路径，并附上收到的参数；对话记录里的工具调用永远不被改动。",
    en:
      "A tool only ever receives arguments that pass its schema (coerced only per the documented table), as a new object; " +
      "a bad call gets an error a model can act on (each failing field by path, plus the received arguments); the tool " +
      "call in the transcript is never changed.",
  },
  adds: {
    zh:
      "`AgentTool<TParameters, TDetails>`：名字、给 UI 的 `label`、写给模型看的 `description`、一个 TypeBox schema 的 `parameters`" +
      "（对模型是 JSON Schema，对 `execute` 是静态类型），以及可选的 `prepareArguments`（校验前修复参数）和 `executionMode`。" +
      "本章写的是模型的工具调用到达 `execute` 之前的那条管道：复制 → `prepareArguments` → 纠正 → 校验。" +
      '“纠正”只做小模型常犯、且意思毫无歧义的几种错：`"42"` → 42（number/integer），`"true"`/`"false"` → 布尔值，' +
      '数字或布尔值 → 字符串，双重编码的 JSON 字符串 → 对象/数组，`"3"` → 字面量 3，可选字段上的 `null` → 删除该字段；' +
      '其他一概不猜（`"1"` 不会变成 true，`4.5` 不会截成整数，单个值不会包成数组）。校验失败时抛出 `ToolArgumentsError`：' +
      "它作为工具结果回到模型那里，模型据此改正自己的调用。`defineTool` 让单独定义的工具保留参数类型推断，" +
      "`toToolDefinition` 给出模型看到的样子：名字、描述和一份干净的 JSON Schema。" +
      "从本章起 `ScriptedModel` 也用这些 schema 检查脚本里的工具调用（`models/scripted-tool-calls.ts`，现成的，不是 lab）：" +
      "请求声明了工具时，调用了没声明的工具、或参数不合 schema（严格校验，不做纠正），那一轮就以 error 结束，" +
      "消息写明第几轮、哪个工具、哪里错；故意演示坏调用的脚本传 `{ checkToolCalls: false }`。",
    en:
      "The AgentTool contract and the pipeline from a model's tool call to execute: copy, prepareArguments, coerce (only the " +
      "documented slips: numeric and boolean strings, numbers to strings, double-encoded JSON, const members, null for " +
      "optional fields), validate with a compiled TypeBox validator, and errors that list each failing field by path with the " +
      "received arguments. defineTool keeps inference; toToolDefinition is what the model sees. From here on ScriptedModel " +
      "checks scripted tool calls against the declared schemas (strictly, no coercion; given, not a lab): a wrong call ends " +
      "its turn with an error naming the turn, the tool and the field; { checkToolCalls: false } plays one on purpose.",
  },
  files: [
    "src/agent/tools.ts",
    "src/agent/tool-coercion.ts",
    "src/base/schema-validator.ts",
    "src/models/scripted-tool-calls.ts",
  ],
  labs: [
    {
      id: "6.1",
      title: { zh: "纠正与校验（coerceValue、validateToolArguments）", en: "coercion and validation" },
      hint: {
        zh: [
          "1. 先 `structuredClone` 一份参数（调用本身不许改动），再沿着 schema 往下走：只有当值的类型不符合 schema 要的类型时，才查纠正表",
          "2. 对象逐个属性、数组逐个元素递归",
          "3. `anyOf` 先看值是否已经符合某个分支，再逐个分支试纠正",
          "4. `allOf` 依次按每一部分纠正",
          '5. `type` 是列表（`["string", "number"]`）时值已符合其中之一就不动，否则按列表顺序取第一个能纠正的',
          "6. 只有 `const` / `enum`、没有 `type` 的 schema（MCP 服务器常这样写）也按成员纠正",
          "7. 什么类型都没要求的 schema（`{}`）不动。",
          "8. 纠正不成的字符串（想要数组或对象、却不是那种 JSON）原样留给校验去拒绝。",
          "9. 最后用编译好的校验器（`Compile(schema)`，每个 schema 只编译一次，放进 WeakMap）检查。",
          "10. 错误信息里每个出错字段单独一行，缺失的必填字段报在它自己的路径上（`/path: is required`）。",
        ].join("\n"),
        en: [
          "1. Clone first",
          "2. walk the schema and consult the table only where the value's type is wrong",
          "3. recurse into properties and items",
          "4. for anyOf keep a fitting value, else try each branch",
          "5. allOf applies each part",
          "6. a type list keeps a value that fits one, else takes the first that converts",
          "7. const/enum without a type coerce to a member",
          "8. {} asks for nothing.",
          "9. Check with a compiled validator cached per schema.",
          "10. One line per failing field; a missing required field at its own path.",
        ].join("\n"),
      },
    },
    {
      id: "6.2",
      says: [
        "prepareArguments failed: ${message}   (a prepareArguments that throws: the ToolArgumentsError's message)",
      ],
      title: { zh: "先修复，再校验（prepareToolArguments）", en: "prepare, then validate" },
      hint: {
        zh:
          "`argumentsError`（第 05 章标记的坏 JSON）直接拒绝，连 `prepareArguments` 都不调用，错误里带上原始文本；" +
          "否则把参数的副本交给 `prepareArguments`，它抛出的错误也要变成模型读得懂的 `ToolArgumentsError`，然后照常校验。",
        en:
          "Refuse a call with argumentsError before anything else; give prepareArguments a copy, turn its throw into a " +
          "ToolArgumentsError, then validate as usual.",
      },
    },
    {
      id: "6.3",
      title: { zh: "模型看到的工具（toToolDefinition）", en: "what the model sees" },
      hint: {
        zh:
          "TypeBox 1.x 的 schema 本身就是 JSON Schema，只是带着不可枚举的内部标记；`JSON.parse(JSON.stringify(schema))` " +
          "得到一份干净的副本。每个 schema 只做一次，冻结后共享（每个回合都要给模型发一次工具列表）。",
        en:
          "A TypeBox 1.x schema is JSON Schema with hidden markers: a JSON round trip gives a clean copy. Make it once per " +
          "schema, freeze it and share it (every turn sends the tool list).",
      },
    },
  ],
  wrong: [
    {
      lab: "6.1",
      what: 'break it, step 1: a wider coercion table ("1"/"0" become booleans, 4.5 is cut to the integer 4)',
      file: "src/agent/tool-coercion.ts",
      find:
        '    case "integer": {\n' +
        '      if (typeof value !== "string") return NO_CHANGE;\n' +
        "      const text = value.trim();\n" +
        "      if (!JSON_NUMBER.test(text)) return NO_CHANGE;\n" +
        "      const number = Number(text);\n" +
        "      if (!Number.isFinite(number)) return NO_CHANGE;\n" +
        '      return type === "integer" && !Number.isInteger(number) ? NO_CHANGE : number;\n' +
        "    }\n" +
        '    case "boolean": {\n' +
        '      if (typeof value !== "string") return NO_CHANGE;\n' +
        "      const text = value.trim().toLowerCase();\n" +
        '      return text === "true" ? true : text === "false" ? false : NO_CHANGE;',
      replace:
        '    case "integer": {\n' +
        '      if (type === "integer" && typeof value === "number") return Math.trunc(value);\n' +
        '      if (typeof value !== "string") return NO_CHANGE;\n' +
        "      const text = value.trim();\n" +
        "      if (!JSON_NUMBER.test(text)) return NO_CHANGE;\n" +
        "      const number = Number(text);\n" +
        "      if (!Number.isFinite(number)) return NO_CHANGE;\n" +
        '      return type === "integer" ? Math.trunc(number) : number;\n' +
        "    }\n" +
        '    case "boolean": {\n' +
        '      if (typeof value !== "string") return NO_CHANGE;\n' +
        "      const text = value.trim().toLowerCase();\n" +
        '      return text === "true" || text === "1" ? true : text === "false" || text === "0" ? false : NO_CHANGE;',
      failsWith: "not in the coercion table: it must be refused, not repaired",
    },
    {
      lab: "6.1",
      what: "the valid arguments returned as the call's own object (no copy on the fast path)",
      file: "src/agent/tools.ts",
      find: "  if (validator.Check(copy)) return copy as Static<TParameters>;",
      replace: "  if (validator.Check(toolCall.arguments)) return toolCall.arguments as Static<TParameters>;",
      failsWith: "not to be",
    },
    {
      lab: "6.1",
      what: "a type list converted to its first type even when the value already fits another",
      file: "src/agent/tool-coercion.ts",
      find: "  if (!types.some((type) => fits(type, result))) {\n    for (const type of types) {",
      replace: "  {\n    for (const type of types) {",
      failsWith: "label",
    },
    {
      lab: "6.1",
      what: "allOf coerced by its first part only, where every part was meant",
      file: "src/agent/tool-coercion.ts",
      find: "    for (const part of schema.allOf) result = coerceValue(part, result, check);",
      replace: "    result = coerceValue(schema.allOf[0], result, check);",
      failsWith: "open",
    },
    {
      lab: "6.1",
      what: "array items never coerced (no recursion into arrays)",
      file: "src/agent/tool-coercion.ts",
      find: '  else if (Array.isArray(result) && types.includes("array")) coerceArray(schema, result, check);\n',
      replace: "",
      failsWith: "values",
    },
    {
      lab: "6.1",
      what: "const and enum without a type left alone: only typed schemas are coerced",
      file: "src/agent/tool-coercion.ts",
      find: '  if ("const" in schema) return coerceToMember([schema.const], value);\n  if (Array.isArray(schema.enum)) return coerceToMember(schema.enum, value);\n',
      replace: "",
      failsWith: "size",
    },
    {
      lab: "6.2",
      what: "prepareArguments runs before the malformed-JSON check",
      file: "src/agent/tools.ts",
      find: "  if (toolCall.argumentsError !== undefined) {",
      replace:
        "  if (tool.prepareArguments !== undefined) tool.prepareArguments(copyJson(toolCall.arguments));\n  if (toolCall.argumentsError !== undefined) {",
      failsWith: "expected true to be false",
    },
    {
      lab: "6.2",
      what: "prepareArguments given the call's own arguments: its repair changes the transcript",
      file: "src/agent/tools.ts",
      find: "    prepared = tool.prepareArguments(copy);",
      replace: "    prepared = tool.prepareArguments(toolCall.arguments);",
      failsWith: "file_path",
    },
    {
      lab: "6.2",
      what: "a throwing prepareArguments rethrown as it is, not as a ToolArgumentsError",
      file: "src/agent/tools.ts",
      find: "    throw new ToolArgumentsError(tool.name, [], toolCall.arguments, `prepareArguments failed: ${messageOf(error)}`);",
      replace: "    throw error;",
      failsWith: "prepareArguments failed: cannot repair",
    },
    {
      lab: "6.2",
      what: "what prepareArguments returns is trusted without validation",
      file: "src/agent/tools.ts",
      find: "  return validateToolArguments(tool, { ...toolCall, arguments: prepared });",
      replace: "  return prepared as Static<TParameters>;",
      failsWith: "offset",
    },
    {
      lab: "6.3",
      what: "the plain schema made again on every call (no cache)",
      file: "src/agent/tools.ts",
      find: "  let parameters = plainSchemas.get(tool.parameters);",
      replace: "  let parameters: Record<string, unknown> | undefined;",
      failsWith: "Object.is equality",
    },
    {
      lab: "6.3",
      what: "the shared plain schema not frozen",
      file: "src/agent/tools.ts",
      find: "    parameters = deepFreeze(JSON.parse(JSON.stringify(tool.parameters)) as Record<string, unknown>);",
      replace: "    parameters = JSON.parse(JSON.stringify(tool.parameters)) as Record<string, unknown>;",
      failsWith: "expected false to be true",
    },
    {
      lab: "6.3",
      what: "the model shown the tool's label instead of its description",
      file: "src/agent/tools.ts",
      find: "  return { name: tool.name, description: tool.description, parameters };",
      replace: "  return { name: tool.name, description: tool.label, parameters };",
      failsWith: "Reads a file.",
    },
  ],
  breakIt: {
    zh:
      '把纠正表扩大：让 `"1"`/`"0"` 也变成布尔值，让 `4.5` 截成整数 4。跑 `npx vitest run test/06- -t "Lab 6\\.1\\b"`，哪个测试失败？' +
      "想一想：一个 `limit: 4.5` 的调用被悄悄改成 4，和直接报错让模型重发，哪种对用户更安全？为什么纠正表要小而明确？",
    en:
      "Widen the table ('1'/'0' to booleans, truncate 4.5 to 4) and run the Lab 6.1 tests: which fails? Is a silent repair " +
      "safer than an error the model can correct? Why must the table stay small and explicit?",
  },
});
