/**
 * The session's tree in the conversation: `/tree`, `/fork N`, `/label TEXT`.
 *
 * A session file is append-only; the place the conversation goes on from is its last entry
 * (`SessionFile.leaf`), and the `Agent` continues from there (`setSession`). So every move of
 * that place is an appended entry, and a restart (`--continue`) finds the branch the person was
 * last on:
 * - `/fork N` appends a label entry as a child of message N (its `targetId` is N, its `label`
 *   N's current label, so N's name does not change). The label entry is the new leaf; the
 *   next message becomes its child: a new branch after N. Nothing is rewritten.
 * - `/label TEXT` appends a label entry naming the current message, as a child of the leaf.
 *
 * Label entries are not context (chapter 10), so the transcript after `/fork N` is the path to N.
 */
import { buildSessionTree, findNode, type TreeNode } from "../session-page/tree.js";
import { headlineOf } from "../session-page/headline.js";
import type { SessionFile } from "../session/session.js";
import { neutralize } from "./trace.js";

/** The lines `/tree` prints for `session` on a terminal `columns` wide. */
export function treeLines(session: SessionFile, columns = 80): string[] {
  const tree = buildSessionTree(session.entries());
  if (tree.nodes.length === 0) return ["the session holds no messages yet"];
  const lines = [
    `${tree.byNumber.length} message${tree.byNumber.length === 1 ? "" : "s"}, ${tree.leaves.length} branch${tree.leaves.length === 1 ? "" : "es"}`,
  ];
  for (const node of tree.nodes) {
    // Marks (a model changed, a model answered: see page-parts.ts), each on a line of its own.
    for (const mark of node.marks) lines.push(`${node.prefix.replace(/├─ $/, "│  ")}  ⇄ ${neutralize(mark.text)}`);
    lines.push(treeLine(node, columns));
    if (node.current) for (const mark of node.marksAfter) lines.push(`  ⇄ ${neutralize(mark.text)}`);
  }
  return lines;
}

function treeLine(node: TreeNode, columns: number): string {
  const label = node.label === undefined ? "" : ` [${neutralize(node.label)}]`;
  const here = node.current
    ? node.children.length > 0
      ? "  ← here (your next message starts a new branch)"
      : "  ← here"
    : "";
  const head = `${node.prefix}${node.number} `;
  const room = Math.max(20, columns - head.length - label.length - here.length - 2);
  const { role, text } = headlineOf(node.entry, room);
  return `${head}${neutralize(role)}: ${cutTo(neutralize(text), room - role.length - 2)}${label}${here}`;
}

function cutTo(text: string, max: number): string {
  if (max < 1) return "";
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * Moves the session's place to message `ref` (a number of `/tree`, or an id or its start): see
 * the module comment. `label`, when given, names that message (the fork point) from now on;
 * otherwise it keeps the label it had. Resolves with the node the conversation now goes on from.
 */
export async function forkSession(session: SessionFile, ref: string, label?: string): Promise<TreeNode> {
  const tree = buildSessionTree(session.entries());
  if (tree.byNumber.length === 0) throw new Error("the session holds no messages yet: there is nothing to fork from");
  const node = findNode(tree, ref);
  const named = label?.trim() || undefined;
  await session.append({
    type: "label",
    parentId: node.entry.id,
    targetId: node.entry.id,
    label: named ?? node.label ?? null,
  });
  return node;
}

/** Names the current message `text` (a label entry appended after the leaf). Resolves with the node named. */
export async function labelSession(session: SessionFile, text: string): Promise<TreeNode> {
  const label = text.trim();
  if (label === "") throw new Error("give the label's text: /label TEXT");
  const tree = buildSessionTree(session.entries());
  const node = tree.current;
  const leaf = session.leaf;
  if (node === undefined || leaf === undefined)
    throw new Error("the session holds no messages yet: there is nothing to label");
  await session.append({ type: "label", parentId: leaf.id, targetId: node.entry.id, label });
  return node;
}
