/**
 * Session files for the session page's tests, written line by line (so ids and times are fixed):
 * a small coding conversation with thinking, tool calls, a tool error, an image, a compaction-free
 * fork and labels; optionally with hostile text in every string a model, a tool or the file can
 * carry; and a long one for measurements.
 */
import type { AssistantMessage, Message, ToolResultMessage, UserMessage } from "../../src/types.js";

/** A 24×16 gradient PNG. */
export const TINY_PNG =
  "iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAACr0lEQVR4nA3MocquMACA4XNhi4tGLS8Dy4owLC4YZhHBsiIMiwuGWUSwrFgslv+yzvdcwPPvT/AJXsEjyIJbcAoOwS7YBKtgEXjBLBgFg6AXdIJW0Ai0oBYgqAT//iSf5JU8kiy5JafkkOySTbJKFomXzJJRMkh6SSdpJY1ES2oJkkr+ooKv4C14CnLBXXAWHAV7wVawFiwFvmAuGAuGgr6gK2gLmgJdUBdQUBW/qOQreUueklxyl5wlR8lespWsJUuJL5lLxpKhpC/pStqSpkSX1CWUVOUvUnyKV/EosuJWnIpDsSs2xapYFF4xK0bFoOgVnaJVNAqtqBUoKvWLNJ/m1TyarLk1p+bQ7JpNs2oWjdfMmlEzaHpNp2k1jUZrag2aSv8iw2d4DY8hG27DaTgMu2EzrIbF4A2zYTQMht7QGVpDY9CG2oChMr/I8lley2PJlttyWg7Lbtksq2WxeMtsGS2Dpbd0ltbSWLSltmCp7C9yfI7X8Tiy43acjsOxOzbH6lgc3jE7Rsfg6B2do3U0Du2oHTgq94smvol34pnIE/fEOXFM7BPbxDqxTPiJeWKcGCb6iW6inWgm9EQ9wUQ1/SLP53k9jyd7bs/pOTy7Z/OsnsXjPbNn9Aye3tN5Wk/j0Z7ag6fyvyjwBd7AE8iBO3AGjsAe2AJrYAn4wBwYA0OgD3SBNtAEdKAOEKjCL4p8kTfyRHLkjpyRI7JHtsgaWSI+MkfGyBDpI12kjTQRHakjRKr4ixJf4k08iZy4E2fiSOyJLbEmloRPzIkxMST6RJdoE01CJ+oEiSr9oovv4r14LvLFfXFeHBf7xXaxXiwX/mK+GC+Gi/6iu2gvmgt9UV9wUV2/KPNl3syTyZk7c2aOzJ7ZMmtmyfjMnBkzQ6bPdJk202R0ps6QqTL/AUseEN+yGMc3AAAAAElFTkSuQmCC";

/**
 * What the hostile variant puts into strings: markup that would run if it were not escaped,
 * a closing tag for every raw-text element, control characters (NUL, ESC, BEL, DEL, C1 CSI).
 */
export const HOSTILE =
  `<script>window.__pwned=(window.__pwned||0)+1;alert("xss")</script><img src=x onerror="window.__pwned=1">` +
  `"'><svg onload=alert(1)></textarea></style></pre></script><!-- \u0000\u001b[31mred\u0007\u007f\u009b2J&amp;&lt;`;

interface Line {
  type: string;
  id: string;
  parentId: string | null;
  timestamp: string;
  [key: string]: unknown;
}

/** The sample conversation as the text of a session file. */
export function sampleSession(options: { hostile?: boolean } = {}): string {
  const h = options.hostile ? HOSTILE : "";
  const id = (n: number) => (options.hostile ? `e${n}${HOSTILE}` : `e${String(n).padStart(7, "0")}`);
  let clock = Date.parse("2026-12-03T10:00:00.000Z");
  const lines: Line[] = [];
  const add = (parent: number | null, n: number, message: Message) => {
    clock += 7_000;
    lines.push({
      type: "message",
      id: id(n),
      parentId: parent === null ? null : id(parent),
      timestamp: new Date(clock).toISOString(),
      message: { ...message, timestamp: clock },
    });
  };
  const user = (text: string, images = false): UserMessage => ({
    role: "user",
    content: [
      { type: "text", text: text + h },
      ...(images ? [{ type: "image" as const, data: TINY_PNG, mimeType: "image/png" }] : []),
    ],
    timestamp: 0,
  });
  const assistant = (
    content: AssistantMessage["content"],
    stopReason: AssistantMessage["stopReason"],
    input: number,
    output: number,
  ): AssistantMessage => ({
    role: "assistant",
    content,
    provider: `openai${h}`,
    model: `gpt-test${h}`,
    usage: { input, output, totalTokens: input + output },
    stopReason,
    timestamp: 0,
  });
  const result = (
    toolCallId: string,
    toolName: string,
    text: string,
    isError = false,
    image = false,
  ): ToolResultMessage => ({
    role: "toolResult",
    toolCallId,
    toolName: toolName + h,
    content: [
      { type: "text", text: text + h },
      ...(image ? [{ type: "image" as const, data: TINY_PNG, mimeType: "image/png" }] : []),
    ],
    isError,
    timestamp: 0,
  });

  add(
    null,
    1,
    user("The greeting in greet.js prints undefined. Fix it, and here is a screenshot of the output.", true),
  );
  add(
    1,
    2,
    assistant(
      [
        { type: "thinking", thinking: `The name is probably not passed through. Read the file first.${h}` },
        { type: "text", text: `Let me look at greet.js.${h}` },
        { type: "toolCall", id: `call_1${h}`, name: `read${h}`, arguments: { path: `greet.js${h}` } },
      ],
      "toolUse",
      1_200,
      80,
    ),
  );
  add(2, 3, result(`call_1${h}`, "read", 'export function greet(name) {\n  return "Hello, " + nam;\n}'));
  add(
    3,
    4,
    assistant(
      [
        { type: "text", text: "The variable is misspelled: `nam`. Fixing it." },
        {
          type: "toolCall",
          id: "call_2",
          name: "edit",
          arguments: { path: "greet.js", oldText: "nam;", newText: "name;" },
        },
      ],
      "toolUse",
      1_420,
      60,
    ),
  );
  add(4, 5, result("call_2", "edit", "Edited greet.js (1 replacement)."));
  add(
    5,
    6,
    assistant(
      [
        {
          type: "toolCall",
          id: "call_3",
          name: "bash",
          arguments: { command: 'node -e \'import("./greet.js").then(m => console.log(m.greet("Ada")))\'' },
        },
      ],
      "toolUse",
      1_530,
      40,
    ),
  );
  add(6, 7, result("call_3", "bash", "Hello, Ada", false, true));
  add(
    7,
    8,
    assistant(
      [{ type: "text", text: `Fixed: greet.js used \`nam\` instead of \`name\`; it now prints "Hello, Ada".${h}` }],
      "stop",
      1_610,
      30,
    ),
  );
  add(8, 9, user("Now add a test for it."));
  add(
    9,
    10,
    assistant(
      [{ type: "toolCall", id: "call_4", name: "bash", arguments: { command: "npm test" } }],
      "toolUse",
      1_700,
      20,
    ),
  );
  add(10, 11, result("call_4", "bash", 'npm ERR! Missing script: "test"', true));
  add(
    11,
    12,
    assistant(
      [{ type: "text", text: "There is no test script yet. Shall I add one with node:test?" }],
      "stop",
      1_800,
      25,
    ),
  );
  // A fork after message 8: the person went back and asked for something else.
  clock += 7_000;
  lines.push({
    type: "label",
    id: id(90),
    parentId: id(8),
    timestamp: new Date(clock).toISOString(),
    targetId: id(8),
    label: `fixed${h}`,
  });
  add(90, 13, user("Instead, rename greet to welcome everywhere."));
  add(
    13,
    14,
    assistant(
      [{ type: "toolCall", id: "call_5", name: "bash", arguments: { command: "grep -rn greet ." } }],
      "toolUse",
      1_650,
      30,
    ),
  );
  add(14, 15, result("call_5", "bash", "./greet.js:1:export function greet(name) {"));
  add(
    15,
    16,
    assistant([{ type: "text", text: `Renamed greet to welcome in greet.js (the only use).${h}` }], "stop", 1_720, 28),
  );
  const header = {
    type: "session",
    version: 1,
    id: options.hostile ? `s${HOSTILE}` : "3f2a9c1e-6b1d-4d0e-9a57-5c2f0e8b7d41",
    timestamp: "2026-12-03T10:00:00.000Z",
    cwd: `/home/ada/greet${h}`,
  };
  return [header, ...lines].map((l) => JSON.stringify(l)).join("\n") + "\n";
}

/**
 * A long session: `entries` entries in turns of a user message, an assistant tool call, its
 * result and an answer, with a fork every `forkEvery` turns (a second answer to the turn's
 * question).
 */
export function longSession(entries: number, forkEvery = 50): string {
  const lines: string[] = [
    JSON.stringify({
      type: "session",
      version: 1,
      id: "long",
      timestamp: "2026-12-03T10:00:00.000Z",
      cwd: "/tmp/long",
    }),
  ];
  let n = 0;
  let parent: string | null = null;
  let clock = Date.parse("2026-12-03T10:00:00.000Z");
  const push = (message: Message, parentId: string | null): string => {
    const id = `m${(n++).toString(16).padStart(7, "0")}`;
    clock += 1000;
    lines.push(
      JSON.stringify({
        type: "message",
        id,
        parentId,
        timestamp: new Date(clock).toISOString(),
        message: { ...message, timestamp: clock },
      }),
    );
    return id;
  };
  const usage = { input: 1000, output: 50, totalTokens: 1050 };
  for (let turn = 0; n < entries; turn++) {
    const question = push(
      {
        role: "user",
        content: [{ type: "text", text: `Step ${turn}: read file ${turn}.txt and say what it holds.` }],
        timestamp: 0,
      },
      parent,
    );
    const call = push(
      {
        role: "assistant",
        content: [{ type: "toolCall", id: `c${turn}`, name: "read", arguments: { path: `${turn}.txt` } }],
        provider: "p",
        model: "m",
        usage,
        stopReason: "toolUse",
        timestamp: 0,
      },
      question,
    );
    const result = push(
      {
        role: "toolResult",
        toolCallId: `c${turn}`,
        toolName: "read",
        content: [{ type: "text", text: `line one of ${turn}\nline two\n`.repeat(4) }],
        isError: false,
        timestamp: 0,
      },
      call,
    );
    if (turn % forkEvery === forkEvery - 1 && n < entries)
      push(
        {
          role: "assistant",
          content: [{ type: "text", text: `An earlier answer to step ${turn}.` }],
          provider: "p",
          model: "m",
          usage,
          stopReason: "stop",
          timestamp: 0,
        },
        result,
      );
    if (n >= entries) break;
    parent = push(
      {
        role: "assistant",
        content: [{ type: "text", text: `File ${turn}.txt holds two lines, four times.` }],
        provider: "p",
        model: "m",
        usage,
        stopReason: "stop",
        timestamp: 0,
      },
      result,
    );
  }
  return lines.join("\n") + "\n";
}
