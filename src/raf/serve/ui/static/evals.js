// raf's local web UI: the Evals page: runs kept by `raf eval`, one run case by case, two
// runs compared (no modules, no build step). Every text from a report goes into the page
// through textContent (the h() helper in base.js); nothing is ever parsed as HTML.
"use strict";

function evalBadge(status) {
  const kind = status === "passed" ? "ok" : status === "failed" || status === "regressed" ? "bad" : "";
  return h("span", { class: `badge ${kind}`, "data-status": status }, status);
}

function percent(value) {
  return value === null || value === undefined ? "–" : `${Math.round(value * 100)}%`;
}

async function evalsPage(parts) {
  if (parts[0] === "run" && parts[1]) return evalRunPage(parts[1]);
  if (parts[0] === "compare" && parts[1] && parts[2]) return evalComparePage(parts[1], parts[2]);
  const data = await api("GET", "/ui/api/evals/runs");
  const rows = data.runs.map((run) => h("tr", { "data-run": run.id },
    h("td", {}, h("a", { href: `#/evals/run/${encodeURIComponent(run.id)}`, class: "open" }, run.id)),
    h("td", {}, run.dataset), h("td", {}, run.name || run.target),
    h("td", {}, `${run.summary.passed}/${run.summary.runs}`), h("td", {}, percent(run.summary.pass_rate)),
    h("td", {}, new Date(run.started_at * 1000).toLocaleString())));
  const options = () => data.runs.map((run) => h("option", { value: run.id }, `${run.id} (${percent(run.summary.pass_rate)})`));
  const before = h("select", { id: "compare-before", "aria-label": "before" }, ...options());
  const after = h("select", { id: "compare-after", "aria-label": "after" }, ...options());
  if (data.runs.length > 1) { before.selectedIndex = 1; after.selectedIndex = 0; }
  const compareForm = h("div", { class: "row" }, "Compare ", before, " with ", after,
    h("button", { id: "compare", class: "primary", onclick: () => go(`#/evals/compare/${encodeURIComponent(before.value)}/${encodeURIComponent(after.value)}`) }, "Compare"));
  const table = h("table", { id: "eval-runs" },
    h("tr", {}, h("th", {}, "Run"), h("th", {}, "Dataset"), h("th", {}, "Target"), h("th", {}, "Passed"), h("th", {}, "Rate"), h("th", {}, "Started")), ...rows);
  show(h("h2", {}, "Eval runs"),
    h("p", { class: "muted" }, `Runs kept by raf eval in ${data.folder}`),
    rows.length ? table : h("p", { class: "muted" }, "No eval runs yet: run raf eval DATASET to add one."),
    data.runs.length > 1 ? compareForm : "");
  document.body.dataset.ready = "evals";
}

function evaluationTable(evaluations) {
  return h("table", { class: "evaluations" },
    h("tr", {}, h("th", {}, "Evaluator"), h("th", {}, "Verdict"), h("th", {}, "Score"), h("th", {}, "Reason")),
    ...evaluations.map((e) => h("tr", { "data-evaluator": e.name },
      h("td", {}, e.name), h("td", {}, evalBadge(e.error ? "errored" : e.passed ? "passed" : "failed")),
      h("td", {}, e.score.toFixed(2)), h("td", { class: "reason" }, e.error || e.reason))));
}

function caseView(result, repeat) {
  const calls = new Map();
  const transcript = h("div", { class: "transcript" }, ...result.transcript.map((m) => messageView(m, calls)).filter(Boolean));
  const label = repeat > 1 ? `${result.case} #${result.repeat + 1}` : result.case;
  return h("details", { class: "card eval-case", "data-case": result.case, "data-status": result.status },
    h("summary", {}, evalBadge(result.status), " ", h("strong", {}, label), " ", h("span", { class: "muted" }, `${result.duration.toFixed(2)}s`)),
    h("div", {}, "Input"), h("pre", { class: "block input" }, result.input),
    result.expected !== null && result.expected !== undefined ? [h("div", {}, "Expected"), h("pre", { class: "block expected" }, pretty(result.expected))] : "",
    h("div", {}, "Answer"), h("pre", { class: "block answer" }, result.text || pretty(result.output)),
    result.error ? h("div", { class: "card error target-error" }, result.error) : "",
    evaluationTable(result.evaluations),
    transcript.childNodes.length ? [h("div", {}, "Transcript"), transcript] : "");
}

async function evalRunPage(runId) {
  const report = await api("GET", `/ui/api/evals/runs/${encodeURIComponent(runId)}`);
  const s = report.summary;
  const order = { errored: 0, failed: 1, passed: 2 };
  const results = report.results.slice().sort((a, b) => order[a.status] - order[b.status]);
  const totals = h("p", { id: "eval-totals" }, `${s.passed}/${s.runs} passed (${percent(s.pass_rate)}), ${s.failed} failed, ${s.errored} errored; median ${s.median_duration}s, p95 ${s.p95_duration}s`,
    report.repeat > 1 ? `; pass@${report.repeat} ${percent(s[`pass@${report.repeat}`])}; flaky: ${(s.flaky || []).join(", ") || "none"}` : "");
  show(h("p", {}, h("a", { href: "#/evals" }, "← all runs")),
    h("h2", {}, `${report.dataset} on ${report.name || report.target}`), totals,
    h("div", { id: "eval-cases" }, ...results.map((r) => caseView(r, report.repeat))));
  document.body.dataset.ready = "evals-run";
}

async function evalComparePage(before, after) {
  const data = await api("GET", `/ui/api/evals/compare/${encodeURIComponent(before)}/${encodeURIComponent(after)}`);
  const changed = data.changes.filter((c) => c.kind !== "same");
  const rows = changed.map((c) => h("tr", { "data-case": c.case, "data-kind": c.kind },
    h("td", {}, evalBadge(c.kind)), h("td", {}, c.case), h("td", {}, percent(c.before)), h("td", {}, percent(c.after)),
    h("td", { class: "reason" }, c.reason)));
  show(h("p", {}, h("a", { href: "#/evals" }, "← all runs")),
    h("h2", {}, `${data.before_id} → ${data.after_id}`),
    h("p", { id: "compare-totals" }, `pass rate ${percent(data.before_pass_rate)} → ${percent(data.after_pass_rate)}; ${data.regressions} regressed, ${data.improvements} improved`),
    rows.length ? h("table", { id: "eval-changes" }, h("tr", {}, h("th", {}, "Change"), h("th", {}, "Case"), h("th", {}, "Before"), h("th", {}, "After"), h("th", {}, "Why")), ...rows)
      : h("p", { class: "muted" }, "No case changed."));
  document.body.dataset.ready = "evals-compare";
}
