/**
 * Chapter 14: the HTML report, one self-contained page a person reads after a suite.
 *
 * No network and no script: styles inline, and a Content-Security-Policy that forbids loading
 * anything, so the page opens the same from a CI artifact, an e-mail or a laptop offline. It
 * shows the summary table (every case, its verdict, pass rate and runs by status), then per
 * case each run as a `<details>` that opens on click: why it failed, the protocol problems, the
 * check's output, and the transcript read back from the run's session file.
 */
import { errorText } from "../base/errors.js";
import { escapeHtml } from "../session-page/escape.js";
import { SessionFile, messagesOf } from "../session/session.js";
import type { AgentMessage, Message } from "../types.js";
import { formatDollars } from "../base/dollars.js";
import type { RunRecord } from "./run-record.js";
import type { SuiteReport } from "./suite-report.js";
// #region ch18
import { costOfRuns } from "./suite-report.js";
// #endregion

/** A run's key in `readTranscripts`' map: `case#repeat`. */
export const runKey = (run: Pick<RunRecord, "case" | "repeat">): string => `${run.case}#${run.repeat}`;

/** The transcript of every run that kept a session file (or why it could not be read). */
export async function readTranscripts(report: SuiteReport): Promise<Map<string, AgentMessage[] | string>> {
  const transcripts = new Map<string, AgentMessage[] | string>();
  for (const run of report.cases.flatMap((c) => c.runs)) {
    if (run.sessionFile === undefined) continue;
    try {
      const session = await SessionFile.open(run.sessionFile, { readOnly: true });
      const leaf = session.leaf;
      transcripts.set(runKey(run), leaf === undefined ? [] : messagesOf(session.pathToLeaf(leaf.id)));
      await session.close();
    } catch (error) {
      transcripts.set(runKey(run), `the session file could not be read: ${errorText(error)}`);
    }
  }
  return transcripts;
}

const STYLE = `
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:70rem;padding:0 1rem;color:#1d1d1f}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3rem .6rem;border-bottom:1px solid #ddd}
.passed{color:#17612a}.failed,.protocol{color:#a0191e}.infrastructure{color:#8a5a00}.interrupted,.incomplete{color:#555}
.bar{display:inline-block;height:.6rem;background:#eee;width:6rem;vertical-align:middle}.bar i{display:block;height:100%;background:#2e8b3e}
details{border:1px solid #ddd;border-radius:6px;margin:.4rem 0;padding:.3rem .6rem}summary{cursor:pointer}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:.5rem;border-radius:4px;max-height:30rem;overflow:auto}
.msg{border-left:3px solid #ccc;padding-left:.6rem;margin:.5rem 0}.user{border-color:#3a6ea5}.assistant{border-color:#6a4ca5}.toolResult{border-color:#999}.error{border-color:#a0191e}
.role{font-weight:600;font-size:.85rem;text-transform:uppercase;letter-spacing:.03em}
`;

/** The whole page for `report`, with the transcripts of `readTranscripts`. */
export function renderHtmlReport(
  report: SuiteReport,
  transcripts: ReadonlyMap<string, AgentMessage[] | string>,
): string {
  const t = report.totals;
  let suiteCost = "";
  // #region ch18
  suiteCost = `<p id="cost">Cost of the suite: ${escapeHtml(costOfRuns(report.cases.flatMap((c) => c.runs)))}</p>\n`;
  // #endregion
  const rows = report.cases
    .map((c) => {
      const rate = c.passRate === null ? "—" : `${Math.round(c.passRate * 100)}%`;
      const width = c.passRate === null ? 0 : Math.round(c.passRate * 100);
      const counts = Object.entries(c.counts)
        .filter(([, n]) => n > 0)
        .map(([status, n]) => `<span class="${status}">${n} ${status}</span>`)
        .join(", ");
      return (
        `<tr data-case="${escapeHtml(c.name)}"><td><a href="#case-${escapeHtml(c.name)}">${escapeHtml(c.name)}</a></td>` +
        `<td class="${c.verdict}">${c.verdict}</td><td><span class="bar"><i style="width:${width}%"></i></span> ${rate} ` +
        `(need ${Math.round(c.minPassRate * 100)}%)</td><td>${counts || "no runs"}</td><td>${escapeHtml(c.tags.join(", "))}</td></tr>`
      );
    })
    .join("\n");
  const sections = report.cases
    .map((c) => {
      const runs = c.runs.map((run) => renderRun(run, transcripts.get(runKey(run)))).join("\n");
      let cost = "";
      // #region ch18
      cost = `<p class="cost">Cost of the case: ${escapeHtml(costOfRuns(c.runs))}</p>\n`;
      // #endregion
      return `<section id="case-${escapeHtml(c.name)}"><h2>${escapeHtml(c.name)} <span class="${c.verdict}">${c.verdict}</span></h2>\n${cost}${runs || "<p>No run finished.</p>"}</section>`;
    })
    .join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>eval · ${escapeHtml(report.suite)}</title><style>${STYLE}</style></head>
<body>
<h1>Eval report · ${escapeHtml(report.suite)}</h1>
<p>Model: ${escapeHtml(report.model)} · ${escapeHtml(report.startedAt)} · ${(report.wallMs / 1000).toFixed(1)} s ·
${report.concurrency} at once · ${report.repeat} run(s) per case${report.interrupted ? ' · <strong class="interrupted">stopped by Ctrl-C: unfinished runs are missing or interrupted</strong>' : ""}</p>
<p id="totals"><strong>${t.passedCases} of ${t.cases} cases passed.</strong> Runs: <span class="passed">${t.passed} passed</span>,
<span class="failed">${t.failed} failed</span> (task), <span class="protocol">${t.protocol} protocol</span>,
<span class="infrastructure">${t.infrastructure} infrastructure</span>, <span class="interrupted">${t.interrupted} interrupted</span>.</p>
${suiteCost}<table id="summary"><thead><tr><th>case</th><th>verdict</th><th>pass rate</th><th>runs</th><th>tags</th></tr></thead>
<tbody>
${rows}
</tbody></table>
${sections}
</body></html>
`;
}

function renderRun(run: RunRecord, transcript: AgentMessage[] | string | undefined): string {
  const facts = [
    `${run.turns} turn(s)`,
    `${run.tokens.total} tokens`,
    run.cost === null ? "cost unknown" : formatDollars(run.cost),
    `${(run.wallMs / 1000).toFixed(1)} s`,
  ].join(" · ");
  const why = run.reason === undefined ? "" : ` — ${escapeHtml(run.phase ?? "")}: ${escapeHtml(run.reason)}`;
  const parts: string[] = [];
  if (run.protocolProblems.length > 0) {
    parts.push(
      `<h3>Protocol problems</h3><ul>${run.protocolProblems.map((p) => `<li>${escapeHtml(p)}</li>`).join("")}</ul>`,
    );
  }
  if (run.notes.length > 0) parts.push(`<ul>${run.notes.map((n) => `<li>${escapeHtml(n)}</li>`).join("")}</ul>`);
  if (run.check !== undefined) {
    const how =
      run.check.startError ??
      (run.check.timedOut
        ? "timed out"
        : run.check.exitCode === null
          ? `killed by ${run.check.signal}`
          : `exit ${run.check.exitCode}`);
    parts.push(
      `<h3>Check (${escapeHtml(how)}, ${(run.check.ms / 1000).toFixed(1)} s)</h3><pre class="check">${escapeHtml(run.check.output) || "(no output)"}</pre>`,
    );
  }
  parts.push(`<h3>Transcript</h3>`);
  if (transcript === undefined) parts.push("<p>No session file was kept.</p>");
  else if (typeof transcript === "string") parts.push(`<p>${escapeHtml(transcript)}</p>`);
  else parts.push(transcript.map(renderMessage).join("\n"));
  if (run.sessionFile !== undefined) parts.push(`<p>Session file: <code>${escapeHtml(run.sessionFile)}</code></p>`);
  return (
    `<details class="run" data-run="${escapeHtml(runKey(run))}"><summary><span class="${run.status}">${run.status}</span> ` +
    `run #${run.repeat}${why} <small>(${facts})</small></summary>\n${parts.join("\n")}\n</details>`
  );
}

function renderMessage(agentMessage: AgentMessage): string {
  const message = agentMessage as Message;
  if (!("role" in message) || !["user", "assistant", "toolResult"].includes(message.role))
    return `<div class="msg"><pre>${escapeHtml(JSON.stringify(message, null, 2))}</pre></div>`;
  if (message.role === "user") {
    return `<div class="msg user"><div class="role">user</div><pre>${escapeHtml(message.content.map((c) => ("text" in c ? c.text : `[${c.type}]`)).join("\n"))}</pre></div>`;
  }
  if (message.role === "toolResult") {
    const text = message.content.map((c) => ("text" in c ? c.text : `[${c.type}]`)).join("\n");
    return (
      `<div class="msg toolResult${message.isError ? " error" : ""}"><div class="role">${escapeHtml(message.toolName)} result` +
      `${message.isError ? " (error)" : ""}</div><pre>${escapeHtml(text)}</pre></div>`
    );
  }
  const blocks = message.content.map((block) => {
    if (block.type === "text") return `<pre>${escapeHtml(block.text)}</pre>`;
    if (block.type === "toolCall")
      return `<pre>→ ${escapeHtml(block.name)} ${escapeHtml(JSON.stringify(block.arguments))}</pre>`;
    return `<pre><em>${escapeHtml(block.type)}</em></pre>`;
  });
  const stop =
    message.stopReason === "error" || message.stopReason === "aborted"
      ? ` (${message.stopReason}: ${escapeHtml(message.errorMessage ?? "")})`
      : "";
  return `<div class="msg assistant${stop ? " error" : ""}"><div class="role">assistant${stop}</div>${blocks.join("")}</div>`;
}
