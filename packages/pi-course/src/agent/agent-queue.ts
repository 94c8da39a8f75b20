/**
 * A queue of messages waiting to be injected into a run: the `Agent`'s steering queue and its
 * follow-up queue. The loop polls it at its drain points; one poll takes the oldest message
 * (`one-at-a-time`) or every queued message (`all`).
 *
 * Taking is dequeuing: a message returned by `take()` is the loop's to inject, and the queue
 * forgets it. Nothing else removes a message except `clear()`, which the caller asks for.
 */
import type { AgentMessage } from "../types.js";
import type { QueueMode } from "./types.js";

/** Checks a message given to `prompt`, `steer` or `followUp`; throws a clear error for anything else. */
export function checkMessage(message: unknown, where: string): AgentMessage {
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    throw new TypeError(`${where}: expected a message object such as userMessage("…"), got ${describe(message)}.`);
  }
  if (typeof (message as { role?: unknown }).role !== "string") {
    throw new TypeError(`${where}: the message has no role; build it with userMessage("…") or give it a role.`);
  }
  return message as AgentMessage;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "string" ? `the string ${JSON.stringify(value.slice(0, 40))}` : typeof value;
}

/** A FIFO of messages with a poll mode. Adding and taking are O(1) amortised per message. */
export class MessageQueue {
  private items: AgentMessage[] = [];
  /** Index of the oldest message in `items`; the slots before it are already taken. */
  private head = 0;

  private queueMode: QueueMode = "one-at-a-time";

  constructor(mode: QueueMode = "one-at-a-time") {
    this.mode = mode;
  }

  /** How much one poll takes. Setting anything but the two modes throws. */
  get mode(): QueueMode {
    return this.queueMode;
  }

  set mode(mode: QueueMode) {
    checkMode(mode);
    this.queueMode = mode;
  }

  /** Messages waiting. */
  get size(): number {
    return this.items.length - this.head;
  }

  /** Adds a message at the end. */
  push(message: AgentMessage): void {
    this.items.push(message);
  }

  /** The waiting messages, oldest first (a copy; nothing is taken). */
  peek(): AgentMessage[] {
    return this.items.slice(this.head);
  }

  /** Takes what one poll takes, per `mode`: the oldest message, or all of them; `[]` if empty. */
  take(): AgentMessage[] {
    // #region lab 9.2 MessageQueue.take
    const waiting = this.items.length - this.head;
    if (waiting === 0) return [];
    if (this.mode === "all" || waiting === 1) {
      const taken = this.head === 0 ? this.items : this.items.slice(this.head);
      this.items = [];
      this.head = 0;
      return taken;
    }
    const oldest = this.items[this.head]!;
    this.items[this.head] = undefined as never; // let it be collected
    this.head++;
    // compact once the taken slots outnumber the waiting ones, so memory stays O(waiting)
    if (this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return [oldest];
    // #endregion
  }

  /** Removes every waiting message and returns them, oldest first. */
  clear(): AgentMessage[] {
    const removed = this.peek();
    this.items = [];
    this.head = 0;
    return removed;
  }
}

/** Throws for anything but the two queue modes. */
export function checkMode(mode: unknown): asserts mode is QueueMode {
  if (mode !== "one-at-a-time" && mode !== "all") {
    throw new TypeError(`Queue mode must be "one-at-a-time" or "all", got ${JSON.stringify(mode)}.`);
  }
}
