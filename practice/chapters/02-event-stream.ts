import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "02",
  slug: "event-stream",
  title: { zh: "事件流 EventStream", en: "EventStream" },
  invariant: {
    zh: "每个事件按推送顺序恰好交给唯一的读者一次；终止事件之后迭代结束，result() 一定会兑现或拒绝，绝不永远挂起。",
    en: "Every event reaches the one reader exactly once, in push order; iteration ends after the terminal event, and result() always settles.",
  },
  adds: {
    zh:
      "`EventStream<T, R>`：单读者的异步事件队列，以一个结果结束。生产者 `push` 事件，消费者用 `for await` 读取；" +
      "第一个满足 `isComplete` 的事件是终止事件，它会作为最后一项交给读者，然后 `result()` 以 `extractResult(终止事件)` 兑现。" +
      "没有读者时事件先缓冲；读者在等待时，下一次 `push` 直接唤醒它。后面每一章（模型流、智能体循环）都建立在它之上。",
    en:
      "A single-reader async queue that ends with a result: buffered when nobody reads, handed straight to a waiting reader, " +
      "terminal event delivered then iteration ends. Every later chapter streams through it.",
  },
  files: ["src/event-stream.ts", "src/index.ts"],
  labs: [
    {
      id: "2.1",
      says: [
        "EventStream already has a reader: a stream delivers each event once, to one consumer. …",
        "EventStream: next() was called again before the previous next() settled. Await each next().",
      ],
      title: {
        zh: "push 与 next：缓冲，或直接交给等待的读者",
        en: "push and next: buffer, or hand to the waiting reader",
      },
      hint: {
        zh: [
          "1. push：已关闭就忽略",
          "2. 终止事件兑现结果，但它本身仍要交给读者",
          "3. 有读者在等就直接交给它（在任何定时器之前兑现它的 next()，`buffered` 仍是 0），否则放进队列。",
          "4. next：先取缓冲（用移动的队头下标代替 shift()，每次 O(1)），没有就登记为等待者",
          "5. 同一时刻只允许一个读者、一个未完成的 next()：第二个 next() 要立即拒绝（返回一个已拒绝的 promise），不能让它也挂着等。",
          "6. 读者 break 时（迭代器的 `return()`）停止缓冲，并按迭代器协议回答 `{ value: undefined, done: true }`。",
        ].join("\n"),
        en: [
          "1. push: ignore after the end",
          "2. a terminal event settles the result and is still delivered",
          "3. hand to a waiting reader (its next() settles before any timer, `buffered` stays 0), else enqueue.",
          "4. next: drain with a moving head (no shift()), else wait",
          "5. one reader, one pending next() (a second one is rejected at once, never left waiting)",
          "6. a reader that breaks (return()) stops the buffering and answers { value: undefined, done: true }.",
        ].join("\n"),
      },
    },
    {
      id: "2.2",
      says: ["EventStream ended without a result: end() was called with no argument before any …"],
      title: { zh: "end：没有终止事件时结束流", en: "end: finishing without a terminal event" },
      hint: {
        zh: "缓冲的事件照常交付；end() 不带参数时 result() 必须立即拒绝（在任何定时器之前；显式的 undefined 也算结果），并立即（同步地，不等任何定时器）唤醒正在等待的读者。",
        en: "Buffered events are still delivered; end() with no argument rejects result() before any timer (an explicit undefined is a result) and wakes a waiting reader at once (synchronously, before any timer).",
      },
      // Its tests push and read first: in practice(02) they meet lab 2.1's site before this one.
      uses: ["2.1"],
    },
  ],
  wrong: [
    {
      lab: "2.1",
      what: "break it, step 1: push always enqueues, even with a reader waiting",
      file: "src/event-stream.ts",
      find: "    const waiter = this.waiter;\n    if (waiter !== undefined) {\n      this.waiter = undefined;\n      waiter({ value: event, done: false });\n      return;\n    }\n    this.queue.push(event);",
      replace: "    this.queue.push(event);",
      failsWith: "the reader is still waiting after pus",
    },
    {
      lab: "2.2",
      what: "break it, step 2: end() with no result never rejects result()",
      file: "src/event-stream.ts",
      find:
        "      this.rejectResult(\n" +
        "        new Error(\n" +
        '          "EventStream ended without a result: end() was called with no argument before any " +\n' +
        '            "terminal event. Push a terminal event or call end(result).",\n' +
        "        ),\n" +
        "      );\n",
      replace: "      // the rejection dropped: result() never settles\n",
      failsWith: "result() is still pending after end()",
    },
    {
      lab: "2.1",
      what: "a second reader only warned about: two for-await loops split the events between them",
      file: "src/event-stream.ts",
      find: "    if (this.hasReader) {\n      throw new Error(",
      replace: "    if (this.hasReader) {\n      console.warn(",
      failsWith: "to throw an error",
    },
    {
      lab: "2.1",
      what: "a second pending next() only warns, and replaces the first reader's resolver",
      file: "src/event-stream.ts",
      find: "    if (this.waiter !== undefined) {\n      return Promise.reject(\n",
      replace: "    if (this.waiter !== undefined) {\n      console.warn(\n",
      failsWith: "the second next() is still waiting",
    },
    {
      lab: "2.1",
      what: "the terminal event settles the result but is not delivered to the reader",
      file: "src/event-stream.ts",
      find: "        throw error;\n      }\n    }\n",
      replace: "        throw error;\n      }\n      this.finishReader();\n      return;\n    }\n",
      failsWith: "end",
    },
    {
      lab: "2.1",
      what: "pushes after the terminal event still delivered (no closed check in push)",
      file: "src/event-stream.ts",
      find: "  push(event: T): void {\n    if (this.closed) return;\n",
      replace: "  push(event: T): void {\n",
      failsWith: "kind",
    },
    {
      lab: "2.1",
      what: "return() answers done but keeps buffering: a reader that broke early still gets events",
      file: "src/event-stream.ts",
      find: "      return: () => {\n        this.detach();\n",
      replace: "      return: () => {\n",
      failsWith: "done",
    },
    {
      lab: "2.2",
      what: "end() never wakes a waiting reader",
      file: "src/event-stream.ts",
      find: "      this.resolveResult(args[0]);\n    }\n    this.finishReader();",
      replace: "      this.resolveResult(args[0]);\n    }",
      failsWith: "the reader is still waiting after end()",
    },
    {
      lab: "2.2",
      what: "end(undefined) taken as end() with no result",
      file: "src/event-stream.ts",
      find: "    if (args.length === 0) {",
      replace: "    if (args[0] === undefined) {",
      failsWith: "ended without a result",
    },
    {
      lab: "2.2",
      what: "end() drops the buffered events (detach instead of finishReader)",
      file: "src/event-stream.ts",
      find: "      this.resolveResult(args[0]);\n    }\n    this.finishReader();",
      replace: "      this.resolveResult(args[0]);\n    }\n    this.detach();",
      failsWith: "kind",
    },
  ],
  breakIt: {
    zh:
      '在 `push` 里把“先交给等待的读者”改成“总是放进队列”，再运行 `npx vitest run test/02- -t "Lab 2\\.1\\b"`：哪个测试用断言抓住了它？它为什么拿一个 0 毫秒的定时器和 next() 赛跑，而不是一直等到超时？' +
      "再试试把 `end()` 无结果时的 reject 删掉：哪个测试抓住了“永远挂起的 promise”，它的失败信息说了什么？",
    en:
      "Make push always enqueue, even with a reader waiting: which test catches it with an assertion, and why does it race next() " +
      "against a 0 ms timer instead of waiting for its timeout? Then drop the rejection in end(): which test catches the promise " +
      "that never settles, and what does its failure say?",
  },
});
