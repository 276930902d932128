// raf's local web UI: the workflows page (no modules, no build step).
// Every text from a model, a tool or a file goes into the page through textContent
// (the h() helper in base.js); nothing untrusted is ever parsed as HTML.
"use strict";

// -- workflows -----------------------------------------------------------------------

function layout(graph) {
  // Longest-path layers from the start node (loop edges ignored), then rows per layer.
  const level = { [graph.start]: 0 };
  const forward = graph.edges.filter((e) => e.kind !== "loop");
  for (let i = 0; i < graph.nodes.length; i++) {
    for (const e of forward) if (level[e.source] !== undefined) level[e.target] = Math.max(level[e.target] || 0, level[e.source] + 1);
  }
  const rows = {};
  const pos = {};
  for (const node of graph.nodes) {
    const l = level[node] === undefined ? 0 : level[node];
    rows[l] = (rows[l] || 0) + 1;
    pos[node] = { x: 20 + l * 180, y: 20 + (rows[l] - 1) * 70 };
  }
  return pos;
}

function drawGraph(graph) {
  const pos = layout(graph);
  const width = Math.max(...Object.values(pos).map((p) => p.x)) + 170;
  const height = Math.max(...Object.values(pos).map((p) => p.y)) + 60;
  const svg = s("svg", { class: "graph", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": `graph of ${graph.name}` });
  svg.append(s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto" }, s("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#888" }))));
  for (const e of graph.edges) {
    const a = pos[e.source], b = pos[e.target];
    if (!a || !b) continue;
    if (e.kind === "loop") svg.append(s("path", { d: `M ${a.x + 60} ${a.y + 36} C ${a.x + 60} ${a.y + 70}, ${b.x + 60} ${b.y + 70}, ${b.x + 60} ${b.y + 36}`, "marker-end": "url(#arrow)", "stroke-dasharray": "4 3", "data-edge": `${e.source}->${e.target}` }));
    else svg.append(s("line", { x1: a.x + 120, y1: a.y + 18, x2: b.x, y2: b.y + 18, "marker-end": "url(#arrow)", "data-edge": `${e.source}->${e.target}` }));
  }
  for (const node of graph.nodes) {
    const p = pos[node];
    svg.append(s("g", { "data-node": node, transform: `translate(${p.x},${p.y})` }, s("rect", { width: 120, height: 36, rx: 6 }), s("text", { x: 60, y: 23, "text-anchor": "middle" }, node)));
  }
  return svg;
}

async function workflowsPage(parts) {
  const workflows = state.catalog.workflows;
  if (!workflows.length) { show(h("h2", {}, "Workflows"), h("p", { class: "muted" }, "No workflows are served.")); return; }
  const name = parts[0] && workflows.some((w) => w.name === parts[0]) ? parts[0] : workflows[0].name;
  const graph = workflows.find((w) => w.name === name);
  const svg = drawGraph(graph);
  const tabs = h("div", { class: "row" }, ...workflows.map((w) => h("a", { href: `#/workflows/${encodeURIComponent(w.name)}`, class: w.name === name ? "active" : "" }, w.name)));
  const input = h("input", { type: "text", id: "wf-input", placeholder: "input (JSON or text)", "aria-label": "workflow input" });
  const start = h("button", { class: "primary", id: "wf-start" }, "Run");
  const status = h("div", { id: "wf-status", role: "status" });
  const step = h("span", { id: "wf-superstep", class: "badge" }, "idle");
  const log = h("div", { id: "wf-events" });
  const requests = h("div", { id: "wf-requests" });
  const checkpoints = h("table", { id: "wf-checkpoints" });

  async function loadCheckpoints() {
    const data = await api("GET", `/ui/api/workflows/${encodeURIComponent(name)}/checkpoints`);
    checkpoints.replaceChildren(h("tr", {}, h("th", {}, "Checkpoint"), h("th", {}, "Run"), h("th", {}, "Superstep"), h("th", {}, "Status"), h("th", {}, "")),
      ...data.checkpoints.map((c) => h("tr", { "data-checkpoint": c.id, "data-status": c.status, "data-superstep": c.superstep }, h("td", {}, c.id), h("td", {}, c.run_id), h("td", {}, String(c.superstep)), h("td", {}, c.status),
        h("td", {}, c.status === "running" ? h("button", { class: "resume", onclick: async () => {
          try { const run = await api("POST", `/ui/api/workflows/${encodeURIComponent(name)}/checkpoints/${encodeURIComponent(c.id)}/resume`); reset(); watch(run.id); }
          catch (error) { notice(error.message); }
        } }, "Resume") : c.status === "paused" ? h("button", { class: "answer-checkpoint", onclick: () => {
          showRequests(c.requests || [], `/ui/api/workflows/${encodeURIComponent(name)}/checkpoints/${encodeURIComponent(c.id)}/answers`);
        } }, "Answer") : ""))));
  }

  function highlight(nodes, cls) {
    for (const g of svg.querySelectorAll("g[data-node]")) {
      if (nodes.includes(g.dataset.node)) g.classList.add(cls);
      if (cls === "active" && !nodes.includes(g.dataset.node)) g.classList.remove("active");
    }
  }

  function reset() {
    log.replaceChildren();
    for (const g of svg.querySelectorAll("g[data-node]")) g.classList.remove("done", "active");
  }

  async function watch(runId) {
    document.body.dataset.workflow = "running";
    requests.replaceChildren();
    status.textContent = "running";
    let seen = 0;
    for (;;) {
      let response;
      try { response = await fetch(`/ui/api/workflow-runs/${encodeURIComponent(runId)}/events?after=${seen}`, { headers: authHeaders() }); }
      catch (error) { await reconnect(null); continue; }
      if (!response.ok) { notice((await response.json().catch(() => ({}))).error?.message || `HTTP ${response.status}`); return; }
      let ended = null;
      try {
        await readEvents(response, (event, data) => {
          if (event === "end") { ended = data; return; }
          seen += 1;
          log.append(h("div", { class: "event", "data-type": data.type }, `${data.type}${data.node ? ` ${data.node}` : ""}${data.superstep !== undefined ? ` (superstep ${data.superstep})` : ""}${data.error ? `: ${data.error}` : ""}`));
          if (data.type === "SuperstepStarted") { step.textContent = `superstep ${data.superstep}`; highlight(data.nodes, "active"); }
          if (data.type === "NodeCompleted") highlight([data.node], "done");
          if (data.type === "OutputEvent" || data.type === "WorkflowCompleted") {
            if (data.type === "OutputEvent") log.append(h("pre", { class: "output" }, pretty(data.data)));
          }
        });
      } catch (error) { await reconnect(null); continue; }
      if (ended) { showEnd(runId, ended); return; }
    }
  }

  // Draws requests for input, each answered by a POST of {responses: {id: text}} to `path`.
  function showRequests(pending, path) {
    requests.replaceChildren(...pending.map((request) => {
      const answer = h("input", { type: "text", "aria-label": `answer ${request.request_id}`, class: "answer" });
      const reply = h("button", { class: "primary reply", onclick: async () => {
        reply.disabled = true;
        try { const run = await api("POST", path, { responses: { [request.request_id]: answer.value } }); reset(); watch(run.id); }
        catch (error) { notice(error.message); reply.disabled = false; }
      } }, "Answer");
      return h("div", { class: "approval", "data-request": request.request_id }, h("div", {}, `${request.node} asks (${request.response_type}):`), h("pre", {}, pretty(request.data)), h("div", { class: "row" }, answer, reply));
    }));
  }

  function showEnd(runId, summary) {
    highlight([], "active");
    status.textContent = summary.status;
    step.textContent = summary.status;
    showRequests(summary.pending, `/ui/api/workflow-runs/${encodeURIComponent(runId)}/answers`);
    loadCheckpoints().catch((error) => notice(error.message));
    document.body.dataset.workflow = summary.status;
  }

  start.addEventListener("click", async () => {
    notice("");
    reset();
    try { const run = await api("POST", `/ui/api/workflows/${encodeURIComponent(name)}/runs`, { input: input.value }); watch(run.id); }
    catch (error) { notice(error.message); }
  });
  // a wide graph scrolls in its own box: the page itself never scrolls sideways
  show(h("h2", {}, "Workflows"), tabs, h("p", { class: "muted" }, graph.description || ""), h("div", { class: "graph-box" }, svg),
    h("div", { class: "row" }, input, start, step, status),
    h("div", { class: "grid" }, h("div", {}, h("h3", {}, "Waiting for input"), requests, h("h3", {}, "Events"), log), h("div", {}, h("h3", {}, "Checkpoints"), checkpoints)));
  await loadCheckpoints();
  document.body.dataset.ready = "workflows";
}
