/**
 * The session page's own style and script, inline in every page (no file beside it, no network).
 *
 * The script shows one branch at a time: a click on a node of the tree shows the path from the
 * root to the newest leaf below that node, and the branch's totals. It reads only the page's own
 * `data-` attributes and writes only `hidden`, classes and `textContent`: nothing of the session
 * is ever turned into markup in the browser. Plain ES2017, no library.
 */

export const PAGE_STYLE = `
:root { color-scheme: light dark; --bg: #fbfbfa; --fg: #1d1d1f; --dim: #6b6b70; --line: #dcdcdf; --card: #fff;
  --user: #e8f0fe; --assistant: #fff; --tool: #f4f4f2; --error: #b3261e; --accent: #2457c5; --mark: #fff3bf; }
@media (prefers-color-scheme: dark) { :root { --bg: #161618; --fg: #e8e8ea; --dim: #9a9aa1; --line: #333338; --card: #1f1f22;
  --user: #1c2a44; --assistant: #1f1f22; --tool: #232326; --error: #ff8a80; --accent: #8ab4f8; --mark: #4a4120; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; }
code, pre, .tree { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 13px; }
.top { padding: 12px 16px; border-bottom: 1px solid var(--line); }
.top h1 { font-size: 17px; margin: 0 0 4px; overflow-wrap: anywhere; }
.top p { margin: 2px 0; color: var(--dim); overflow-wrap: anywhere; }
.layout { display: grid; grid-template-columns: minmax(260px, 36%) 1fr; align-items: start; }
.side { position: sticky; top: 0; max-height: 100vh; overflow: auto; border-right: 1px solid var(--line); padding: 8px; }
.side > summary { font-weight: 600; cursor: pointer; padding: 4px; }
.tree { list-style: none; margin: 0; padding: 0; }
.tree li { content-visibility: auto; contain-intrinsic-size: auto 22px; }
.tree button { display: block; width: 100%; text-align: left; border: 0; background: none; color: inherit; font: inherit;
  padding: 1px 4px; white-space: pre; overflow: hidden; text-overflow: ellipsis; cursor: pointer; border-radius: 4px; }
.tree button:hover { background: var(--tool); }
.tree button.on-path { font-weight: 600; }
.tree button.selected { background: var(--mark); }
.tree .guide { color: var(--dim); }
.tree .here { color: var(--accent); }
.tree .label { color: var(--accent); }
.tree .failed { color: var(--error); }
main { padding: 8px 16px 48px; min-width: 0; }
.totals { color: var(--dim); margin: 4px 0 12px; }
.entry { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; margin: 10px 0;
  content-visibility: auto; contain-intrinsic-size: auto 90px; }
.entry.user { background: var(--user); }
.entry.toolResult, .entry.summary { background: var(--tool); }
.meta { color: var(--dim); font-size: 13px; display: flex; flex-wrap: wrap; gap: 2px 8px; }
.meta .role { font-weight: 600; color: var(--fg); }
.meta time { margin-left: auto; }
.meta .stop, .error, .failed > summary { color: var(--error); }
.label { color: var(--accent); }
.text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 6px 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 6px 0; max-height: 60vh; overflow: auto; }
details.fold { margin: 6px 0; }
details.fold > summary { cursor: pointer; overflow-wrap: anywhere; }
.thinking { color: var(--dim); font-style: italic; }
.dim { color: var(--dim); }
.image { max-width: 100%; height: auto; display: block; margin: 6px 0; border-radius: 4px; }
@media (max-width: 760px) {
  .layout { display: block; }
  .side { position: static; max-height: 45vh; border-right: 0; border-bottom: 1px solid var(--line); }
  main { padding: 4px 8px 32px; }
  .meta time { margin-left: 0; }
}
`;

export const PAGE_SCRIPT = `
(function () {
  "use strict";
  // Read once: each article's parent and tokens, each tree button by id.
  var articles = new Map();
  var parentOf = new Map();
  var tokensOf = new Map();
  document.querySelectorAll("article[data-id]").forEach(function (a) {
    var id = a.getAttribute("data-id");
    articles.set(id, a);
    parentOf.set(id, a.getAttribute("data-parent"));
    tokensOf.set(id, [Number(a.getAttribute("data-in") || 0), Number(a.getAttribute("data-out") || 0)]);
  });
  var buttons = new Map();
  document.querySelectorAll(".tree button[data-id]").forEach(function (b) { buttons.set(b.getAttribute("data-id"), b); });
  var totals = document.getElementById("branch-totals");
  var fmt = function (n) { return n.toLocaleString("en"); };
  var shown = new Set();
  articles.forEach(function (a, id) { if (!a.hidden) shown.add(id); });
  var selected = null;
  buttons.forEach(function (b, id) { if (b.classList.contains("selected")) selected = id; });
  // Shows the path from the root to leafId; only what changes is touched, so a switch costs
  // the two branches' difference, not the whole session.
  function show(leafId, selectedId) {
    var on = new Set();
    for (var id = leafId; id && !on.has(id); id = parentOf.get(id)) on.add(id);
    var input = 0, output = 0;
    on.forEach(function (id) {
      var t = tokensOf.get(id);
      if (t) { input += t[0]; output += t[1]; }
      if (!shown.has(id)) {
        var a = articles.get(id), b = buttons.get(id);
        if (a) a.hidden = false;
        if (b) b.classList.add("on-path");
      }
    });
    shown.forEach(function (id) {
      if (!on.has(id)) {
        var a = articles.get(id), b = buttons.get(id);
        if (a) a.hidden = true;
        if (b) b.classList.remove("on-path");
      }
    });
    shown = on;
    if (selected !== selectedId) {
      var old = selected && buttons.get(selected);
      if (old) { old.classList.remove("selected"); old.removeAttribute("aria-current"); }
      var now = buttons.get(selectedId);
      if (now) { now.classList.add("selected"); now.setAttribute("aria-current", "true"); }
      selected = selectedId;
    }
    document.body.setAttribute("data-shown-leaf", leafId);
    if (totals) totals.textContent = "This branch: " + fmt(on.size) + " messages · tokens in " + fmt(input) + " · out " + fmt(output);
  }
  var tree = document.getElementById("tree");
  if (tree) tree.addEventListener("click", function (event) {
    var target = event.target;
    var button = target && target.closest ? target.closest("button[data-id]") : null;
    if (!button) return;
    var id = button.getAttribute("data-id");
    show(button.getAttribute("data-leaf"), id);
    var article = articles.get(id);
    if (article) article.scrollIntoView({ block: "start" });
  });
  var side = document.getElementById("side");
  if (side && window.matchMedia && window.matchMedia("(max-width: 760px)").matches) side.open = false;
  document.body.setAttribute("data-ready", "true");
})();
`;
