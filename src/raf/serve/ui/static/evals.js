// raf's local web UI: the Evals page: runs kept by `raf eval`, one run case by case, two
// runs compared, the datasets of the datasets folder; and the form that saves a turn of a
// chat as a case in one of them (no modules, no build step). Every text from a report goes into the page
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
  if (parts[0] === "dataset" && parts[1]) return evalDatasetPage(parts[1]);
  const [data, sets] = await Promise.all([api("GET", "/ui/api/evals/runs"), api("GET", "/ui/api/evals/datasets")]);
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
    data.runs.length > 1 ? compareForm : "",
    datasetsTable(sets));
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

// -- datasets --------------------------------------------------------------------------

function datasetsTable(sets) {
  const rows = sets.datasets.map((d) => h("tr", { "data-dataset": d.name },
    h("td", {}, h("a", { href: `#/evals/dataset/${encodeURIComponent(d.name)}`, class: "open" }, d.name),
      d.shared ? h("span", { class: "badge", title: "the project's dataset: read-only here" }, "shared") : null),
    h("td", {}, d.error ? h("span", { class: "badge bad" }, "unreadable") : String(d.cases)),
    h("td", { class: "muted" }, d.file)));
  return h("div", { id: "datasets" }, h("h2", {}, "Datasets"),
    h("p", { class: "muted" }, `Datasets in ${sets.folder}; a chat turn is saved into one with "Save as eval case" on the chat page.`),
    rows.length ? h("table", { id: "eval-datasets" }, h("tr", {}, h("th", {}, "Dataset"), h("th", {}, "Cases"), h("th", {}, "File")), ...rows)
      : h("p", { class: "muted" }, "No datasets yet."));
}

function caseInput(input) {
  if (Array.isArray(input) && input.every((m) => m && typeof m === "object" && "role" in m && "content" in m)) {
    return input.map((m) => `${m.role}: ${m.content}`).join("\n");
  }
  return pretty(input);
}

function datasetCaseView(c) {
  const calls = c.expected_tool_calls || [];
  return h("details", { class: "card dataset-case", "data-case": c.name, open: true },
    h("summary", {}, h("strong", { class: "case-name" }, c.name), " ", h("span", { class: "muted" }, (c.evaluators || []).map(pretty).join(", "))),
    h("div", {}, "Input"), h("pre", { class: "block input" }, caseInput(c.input)),
    c.expected_output !== undefined ? [h("div", {}, "Expected"), h("pre", { class: "block expected" }, pretty(c.expected_output))] : "",
    calls.length ? [h("div", {}, "Expected tool calls"), h("ol", { class: "expected-calls" }, ...calls.map((call) => h("li", {}, h("strong", {}, call.name), " ", h("code", {}, JSON.stringify(call.arguments || {})))))] : "");
}

async function evalDatasetPage(name) {
  const data = await api("GET", `/ui/api/evals/datasets/${encodeURIComponent(name)}`);
  show(h("p", {}, h("a", { href: "#/evals" }, "← evals")),
    h("h2", {}, `Dataset ${data.name}`),
    data.description ? h("p", {}, data.description) : "",
    h("p", { class: "muted", id: "dataset-file" }, `${data.file}: ${data.cases.length} case(s)${data.evaluators.length ? `; every case is judged by ${data.evaluators.map(pretty).join(", ")}` : ""}. Run it with raf eval ${data.file} AGENT.yaml`),
    h("div", { id: "dataset-cases" }, ...data.cases.map(datasetCaseView)));
  document.body.dataset.ready = "evals-dataset";
}

// -- a chat turn saved as a case -------------------------------------------------------

// A dataset name as the server takes it: letters, digits, '_' and '-' (a file of the folder).
function datasetName(text) {
  return (text || "").replace(/[^A-Za-z0-9_-]+/g, "-").replace(/^[-_]+|-+$/g, "").slice(0, 80) || "recorded";
}

// The form under the chat: which turn, the case's name, the dataset (one listed on the
// Evals page, or a new one); the server makes the case from the stored session.
async function caseForm(agent, sessionId, box) {
  const base = `/ui/api/agents/${encodeURIComponent(agent)}/sessions/${encodeURIComponent(sessionId)}`;
  const [{ turns }, sets] = await Promise.all([api("GET", `${base}/turns`), api("GET", "/ui/api/evals/datasets")]);
  if (!turns.length) { box.replaceChildren(h("p", { class: "muted" }, "This conversation has no finished turn yet: send a message first.")); return; }
  const short = (text, n) => (text || "").length > n ? `${text.slice(0, n)}…` : (text || "");
  const turn = h("select", { id: "case-turn", "aria-label": "turn" }, ...turns.map((t) => h("option", { value: String(t.turn), selected: t.turn === turns.length - 1 },
    `${t.turn + 1}. ${short(t.input, 60)} → ${t.answer === null ? "(no answer)" : short(t.answer, 40)}${t.tool_calls.length ? ` [${t.tool_calls.join(", ")}]` : ""}`)));
  const name = h("input", { type: "text", id: "case-name", "aria-label": "case name", maxlength: 200 });
  let named = false;
  name.addEventListener("input", () => { named = true; });
  const propose = () => { if (!named) name.value = short(turns[Number(turn.value)].input, 60); };
  turn.addEventListener("change", propose);
  propose();
  const readable = sets.datasets.filter((d) => !d.error);
  const dataset = h("select", { id: "case-dataset", "aria-label": "dataset" },
    ...readable.map((d) => h("option", { value: d.name }, `${d.name} (${d.cases} case${d.cases === 1 ? "" : "s"})`)),
    h("option", { value: "" }, "new dataset…"));
  const fresh = h("input", { type: "text", id: "case-new-dataset", "aria-label": "new dataset name", value: datasetName(agent), maxlength: 80 });
  const freshRow = h("label", { class: "row" }, "New dataset ", fresh);
  const toggle = () => { freshRow.hidden = dataset.value !== ""; };
  dataset.addEventListener("change", toggle);
  toggle();
  const result = h("div", { id: "case-result", role: "status" });
  const save = h("button", { class: "primary", id: "case-save", type: "submit" }, "Save case");
  const form = h("form", { class: "card case-form", id: "case-form" },
    h("h3", {}, "Save as eval case"),
    h("p", { class: "muted" }, "The turn's question is the input, its answer the expected output, the tools it called the expected trajectory."),
    h("label", { class: "row" }, "Turn ", turn), h("label", { class: "row" }, "Case name ", name),
    h("label", { class: "row" }, "Dataset ", dataset), freshRow,
    h("div", { class: "row" }, save, h("button", { type: "button", id: "case-cancel", onclick: () => box.replaceChildren() }, "Close")), result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    save.disabled = true;
    result.className = "";
    const target = dataset.value || fresh.value.trim();
    try {
      const saved = await api("POST", `${base}/eval-cases`, { dataset: target, name: name.value, turn: Number(turn.value) });
      result.className = "ok";
      result.replaceChildren(`Saved case "${saved.case.name}" in dataset ${saved.dataset.name} (${saved.dataset.cases} case${saved.dataset.cases === 1 ? "" : "s"}, ${saved.dataset.file}). `,
        h("a", { href: `#/evals/dataset/${encodeURIComponent(saved.dataset.name)}`, id: "case-open" }, "Open the dataset"));
    } catch (error) {
      result.className = "bad";
      result.textContent = `Not saved: ${error.message}`;
    } finally {
      save.disabled = false;
    }
  });
  box.replaceChildren(form);
  name.focus();
}
