/**
 * reach.ts: which earlier tests practice(N) runs. Each way a test can reach a lab's file is
 * followed, and the ways it cannot are not (a doc comment, a type-only import, an import
 * specifier read as an entry point).
 */
import { describe, expect, it } from "vitest";
import { testsReaching } from "../reach.js";

const folder = (files: Record<string, string>) => new Map(Object.entries(files));

describe("testsReaching", () => {
  const files = folder({
    "src/index.ts": [
      'export { lab } from "./lab.js";',
      'export { other } from "./other.js";',
      'export type { LabType } from "./lab.js";',
    ].join("\n"),
    "src/lab.ts": "export function lab() {}\nexport type LabType = 1;",
    "src/other.ts": "/** Unlike `lab.ts`, nothing to write. */\nexport function other() {}",
    "src/uses-lab.ts": 'import { lab } from "./lab.js";\nexport const uses = lab;',
    "src/cli/start.ts": 'import { uses } from "../uses-lab.js";\nuses();',
    "src/cli/main.ts": 'import { uses } from "../uses-lab.js";\nuses();',
    "test/direct.test.ts": 'import { lab } from "../src/lab.js";',
    "test/transitive.test.ts": 'import { uses } from "../src/uses-lab.js";',
    "test/barrel.test.ts": 'import { lab, other } from "../src/index.js";',
    "test/barrel-other.test.ts": 'import { other } from "../src/index.js";',
    "test/barrel-type.test.ts": 'import type { LabType } from "../src/index.js";',
    "test/barrel-namespace.test.ts": 'import * as all from "../src/index.js";',
    "test/child.test.ts": 'const entry = join(root, "src", "cli", "start.ts");',
    "test/support/spawner.ts": 'export const entry = "../../src/cli/start.ts";',
    "test/via-support.test.ts": 'import { entry } from "./support/spawner.js";',
    "test/literal-path.test.ts": 'spawn("tsx", ["src/cli/main.ts"]);',
    "test/bare-name.test.ts": 'await write(workspace, "main.ts", "x");\nparser.push(\'main.ts", "content": "hi\');',
    "test/other-folder.test.ts": 'const tool = join(root, "tools", "start.ts");',
    "test/comment.test.ts": '// start.ts is started elsewhere\nimport { other } from "../src/other.js";',
  });

  it("follows imports, named barrel imports, other uses of the barrel and entry points named by a path in strings", () => {
    expect(testsReaching(files, new Set(["src/lab.ts"]))).toEqual([
      "test/barrel-namespace.test.ts",
      "test/barrel.test.ts",
      "test/child.test.ts",
      "test/direct.test.ts",
      "test/literal-path.test.ts",
      "test/transitive.test.ts",
      "test/via-support.test.ts",
    ]);
  });

  it("a bare file name is a test's own file, and a path must end as the file's does", () => {
    const reached = testsReaching(files, new Set(["src/lab.ts"]));
    // "main.ts" written into a test's workspace, and a mixed-quote fragment, are not src/cli/main.ts.
    expect(reached).not.toContain("test/bare-name.test.ts");
    // tools/start.ts is not src/cli/start.ts.
    expect(reached).not.toContain("test/other-folder.test.ts");
  });

  it("a file that reaches no target leads nowhere", () => {
    expect(testsReaching(files, new Set(["src/nothing.ts"]))).toEqual([]);
    expect(testsReaching(files, new Set(["src/other.ts"]))).toEqual([
      "test/barrel-namespace.test.ts",
      "test/barrel-other.test.ts",
      "test/barrel.test.ts",
      "test/comment.test.ts",
    ]);
  });
});
