/**
 * The shape of a session's tree as a person sees it: the `/tree` command and the session page
 * both draw this.
 *
 * A session file (chapter 10) is a tree of entries. What is *shown* are its messages and
 * compactions, one node each. Label entries are not shown as nodes: a label names its target
 * (the newest label entry for a target wins; `label: null` clears it), and a label entry's
 * children are drawn as children of the label's own parent, so a fork point (`/fork` appends a
 * label entry under the message forked from, see cli/session-tree.ts) or a bookmark never adds a
 * line.
 *
 * Numbers are 1-based positions of the shown entries in file order. The file is append-only, so
 * a number never changes: `/fork 12` means the same message tomorrow.
 *
 * The place a conversation goes on from is the file's last entry (`SessionFile.leaf`); every
 * move of that place (a message, a compaction, a fork, a label) appends an entry, so the place
 * is in the file and `--continue` finds it again. The node of that place is `current`.
 *
 * Cost: linear in the entries, no recursion (a 10,000-message chain is 10,000 levels deep).
 */
import type { CompactionEntry, MessageEntry, SessionEntry } from "../session/types.js";
import { markOf, type TreeMark } from "./page-parts.js";

/** An entry drawn as a node of the tree. */
export type ShownEntry = MessageEntry | CompactionEntry;

/** One node of the tree, in drawing order (depth first, children in file order). */
export interface TreeNode {
  entry: ShownEntry;
  /** 1-based position among the shown entries, in file order: stable, since the file only grows. */
  number: number;
  /** The shown parent (labels skipped), or undefined for a root. */
  parent: TreeNode | undefined;
  /** Shown children, in file order. */
  children: TreeNode[];
  /** How many side branches it is inside (0: on the line of newest branches from the root). */
  depth: number;
  /** What to draw before the node's line: guides (`│  `) and, for the first node of a side branch, `├─ `. */
  prefix: string;
  /** The newest label of this entry, if any. */
  label: string | undefined;
  /** The node the conversation goes on from. */
  current: boolean;
  /** On the path from a root to the current node. */
  onCurrentPath: boolean;
  /** The newest shown leaf below this node (or itself): what clicking it shows. */
  newestLeaf: TreeNode;
  /** The marks on the path since the shown parent, in order (see page-parts.ts): what happened before this node. */
  marks: TreeMark[];
  /** On the current node only: the marks after it, not yet followed by a message (`SessionTree.marksAtPlace`). */
  marksAfter: TreeMark[];
}

/** A session's tree, ready to draw. */
export interface SessionTree {
  /** Every shown entry, in drawing order. */
  nodes: TreeNode[];
  /** The shown entries in file order (`byNumber[n - 1]` is number n). */
  byNumber: TreeNode[];
  /** The node the conversation goes on from (undefined when nothing is shown yet). */
  current: TreeNode | undefined;
  /** Nodes without children: one per branch, in drawing order. */
  leaves: TreeNode[];
  /** The marks after the current node, not yet followed by a message (e.g. a `/model` before the next prompt). */
  marksAtPlace: TreeMark[];
}

/**
 * Builds the tree of `entries` (file order, each parent before its children, as
 * `SessionFile.entries()` and `readSessionFile` give them). `place` is the entry the
 * conversation goes on from; default: the last entry.
 */
export function buildSessionTree(entries: readonly SessionEntry[], place?: string): SessionTree {
  const byId = new Map<string, SessionEntry>();
  const labels = new Map<string, string | null>();
  const childrenOf = new Map<string | null, SessionEntry[]>();
  for (const entry of entries) {
    byId.set(entry.id, entry);
    if (entry.type === "label") labels.set(entry.targetId, entry.label);
    const siblings = childrenOf.get(entry.parentId);
    if (siblings === undefined) childrenOf.set(entry.parentId, [entry]);
    else siblings.push(entry);
  }
  const nodeOf = new Map<string, TreeNode>();
  const byNumber: TreeNode[] = [];
  for (const entry of entries) {
    if (entry.type !== "message" && entry.type !== "compaction") continue;
    const node: TreeNode = {
      entry,
      number: byNumber.length + 1,
      parent: undefined,
      children: [],
      depth: 0,
      prefix: "",
      label: labels.get(entry.id) ?? undefined,
      current: false,
      onCurrentPath: false,
      newestLeaf: undefined as unknown as TreeNode,
      marks: [],
      marksAfter: [],
    };
    node.newestLeaf = node;
    byNumber.push(node);
    nodeOf.set(entry.id, node);
  }
  // The shown parent of each shown entry: its nearest shown ancestor. Parents come first in the
  // file, so one pass in file order sees every parent's answer before its children ask.
  const shownAncestor = new Map<string, TreeNode | undefined>();
  const roots: TreeNode[] = [];
  for (const entry of entries) {
    const parent =
      entry.parentId === null ? undefined : (nodeOf.get(entry.parentId) ?? shownAncestor.get(entry.parentId));
    const node = nodeOf.get(entry.id);
    shownAncestor.set(entry.id, node ?? parent);
    if (node === undefined) continue;
    node.parent = parent;
    if (parent === undefined) roots.push(node);
    else parent.children.push(node);
  }

  const nodes = drawingOrder(roots);

  const at = place ?? entries[entries.length - 1]?.id;
  let current: TreeNode | undefined;
  if (at !== undefined) {
    if (!byId.has(at)) throw new Error(`no entry "${at}" in this session`);
    current = nodeOf.get(at) ?? shownAncestor.get(at);
  }
  if (current !== undefined) current.current = true;
  for (let n = current; n !== undefined; n = n.parent) n.onCurrentPath = true;
  const tree: SessionTree = {
    nodes,
    byNumber,
    current,
    leaves: nodes.filter((n) => n.children.length === 0),
    marksAtPlace: [],
  };
  // The marks met since the last shown entry, per entry, in file order (parents first).
  const pending = new Map<string | null, TreeMark[]>([[null, []]]);
  for (const entry of entries) {
    const before = pending.get(entry.parentId) ?? [];
    const node = nodeOf.get(entry.id);
    if (node !== undefined) node.marks = before;
    const mark = node === undefined ? markOf(entry) : undefined;
    pending.set(entry.id, node !== undefined ? [] : mark !== undefined ? [...before, mark] : before);
  }
  if (at !== undefined && !nodeOf.has(at)) tree.marksAtPlace = pending.get(at) ?? [];
  if (current !== undefined) current.marksAfter = tree.marksAtPlace;
  return tree;
}

/**
 * Lays out the trees under `roots`: their nodes in drawing order (depth first, without
 * recursion), each node's `prefix` and `depth`, and each node's `newestLeaf`.
 */
function drawingOrder(roots: TreeNode[]): TreeNode[] {
  const nodes: TreeNode[] = [];
  const stack: { node: TreeNode; prefix: string; guide: string; depth: number }[] = [];
  // Where a message has several children, the newest (the last in file order) goes on in the
  // same column, and each earlier one is a side branch drawn `├─ ` and indented `│  `: a session
  // that was forked a hundred times and always went on from the newest branch stays in column 0.
  const pushChildren = (children: TreeNode[], guide: string, depth: number) => {
    for (let i = children.length - 1; i >= 0; i--) {
      const side = i < children.length - 1;
      stack.push({
        node: children[i]!,
        prefix: side ? `${guide}├─ ` : guide,
        guide: side ? `${guide}│  ` : guide,
        depth: side ? depth + 1 : depth,
      });
    }
  };
  pushChildren(roots, "", 0);
  while (stack.length > 0) {
    const { node, prefix, guide, depth } = stack.pop()!;
    node.prefix = prefix;
    node.depth = depth;
    nodes.push(node);
    pushChildren(node.children, guide, depth);
  }
  // Newest leaf below each node: children are drawn after their parent, so go backwards.
  for (let i = nodes.length - 1; i >= 0; i--) {
    const node = nodes[i]!;
    for (const child of node.children) {
      if (node.newestLeaf === node || child.newestLeaf.number > node.newestLeaf.number)
        node.newestLeaf = child.newestLeaf;
    }
  }
  return nodes;
}

/**
 * The node `ref` names: a number of the tree (`12`), or an entry id or the start of one
 * (`3fa9`). Throws an `Error` that says what to give instead.
 */
export function findNode(tree: SessionTree, ref: string): TreeNode {
  const wanted = ref.trim();
  if (wanted === "") throw new Error("give a message number from /tree, or an entry id");
  if (/^\d+$/.test(wanted)) {
    const node = tree.byNumber[Number(wanted) - 1];
    if (node === undefined) {
      throw new Error(`there is no message ${wanted}: /tree numbers them 1 to ${tree.byNumber.length}`);
    }
    return node;
  }
  const matches = tree.byNumber.filter((n) => n.entry.id.startsWith(wanted));
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw new Error(`no message has an id starting "${wanted}"; /tree shows the numbers`);
  throw new Error(
    `"${wanted}" starts ${matches.length} ids (${matches.map((n) => n.number).join(", ")}); give the number`,
  );
}
