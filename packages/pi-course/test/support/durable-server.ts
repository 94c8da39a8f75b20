/**
 * The model server of the durable-run crash tests: an OpenAI-compatible `/chat/completions` on
 * 127.0.0.1 whose answer depends only on the request, so a run killed anywhere and resumed
 * gets the answer its transcript calls for, however many requests came before.
 *
 * For the first user message, by the number of tool results after it (t):
 *   t = 0: a short text, then `bash` (an effect: appends the call's id to effects.log, then sleeps)
 *   t = 1: `read effects.log` and `ls .` in one message (both safe to replay)
 *   t = 3: `bash` again (a second effect)
 *   t ≥ 4: the final answer, streamed in small pieces with pauses (so a kill can land mid-stream)
 * For every later user message: the final answer at once (`FINAL`).
 * Tool call ids are `call_<t>_<n>`: unique within a conversation's first prompt.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export const FINAL = "All done: both steps ran once.";

interface WireMessage {
  role: string;
}

export class DurableServer {
  requests = 0;
  private constructor(
    private readonly server: Server,
    readonly baseUrl: string,
  ) {}

  static async start(options: { pauseMs?: number; sleepSeconds?: number } = {}): Promise<DurableServer> {
    const pause = options.pauseMs ?? 15;
    const sleep = options.sleepSeconds ?? 0.3;
    let self: DurableServer | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        self!.requests++;
        let messages: WireMessage[];
        try {
          messages = (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { messages: WireMessage[] }).messages;
        } catch {
          res.writeHead(400).end("bad json");
          return;
        }
        const users = messages.filter((m) => m.role === "user").length;
        const lastUser = messages.map((m) => m.role).lastIndexOf("user");
        const t = messages.slice(lastUser + 1).filter((m) => m.role === "tool").length;
        res.writeHead(200, { "content-type": "text/event-stream" });
        const frames = users > 1 ? textFrames(FINAL, 1) : script(t, sleep);
        void (async () => {
          for (const frame of frames) {
            if (res.destroyed) return;
            res.write(`data: ${JSON.stringify(frame)}\n\n`);
            if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
          }
          res.end("data: [DONE]\n\n");
        })();
      });
      req.on("error", () => undefined);
      res.on("error", () => undefined);
    });
    server.keepAliveTimeout = 1;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    self = new DurableServer(server, `http://127.0.0.1:${port}/v1`);
    return self;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function chunk(delta: object, reason: string | null = null): object {
  return {
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{ index: 0, delta, finish_reason: reason }],
  };
}

/** A text answer in pieces of `size` words. */
function textFrames(text: string, size: number): object[] {
  const words = text.split(/(?<= )/);
  const frames: object[] = [chunk({ role: "assistant", content: "" })];
  for (let i = 0; i < words.length; i += size) frames.push(chunk({ content: words.slice(i, i + size).join("") }));
  frames.push(chunk({}, "stop"));
  return frames;
}

/** A message with some text and tool calls, each call's arguments in three pieces. */
function callFrames(text: string, calls: { id: string; name: string; args: object }[]): object[] {
  const frames: object[] = [chunk({ role: "assistant", content: "" })];
  for (const word of text.split(/(?<= )/)) frames.push(chunk({ content: word }));
  calls.forEach((call, index) => {
    const json = JSON.stringify(call.args);
    const third = Math.ceil(json.length / 3);
    frames.push(
      chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }),
    );
    for (let i = 0; i < json.length; i += third)
      frames.push(chunk({ tool_calls: [{ index, function: { arguments: json.slice(i, i + third) } }] }));
  });
  frames.push(chunk({}, "tool_calls"));
  return frames;
}

function script(t: number, sleep: number): object[] {
  const effect = (id: string) => ({ command: `echo ${id} >> effects.log; sleep ${sleep}` });
  if (t === 0)
    return callFrames("First I record step one.", [{ id: "call_0_0", name: "bash", args: effect("call_0_0") }]);
  if (t === 1 || t === 2)
    return callFrames("Now I look at what happened.", [
      { id: "call_1_0", name: "read", args: { path: "effects.log" } },
      { id: "call_1_1", name: "ls", args: { path: "." } },
    ]);
  if (t === 3) return callFrames("Then step two.", [{ id: "call_3_0", name: "bash", args: effect("call_3_0") }]);
  return textFrames(FINAL, 1);
}
