// raf's local web UI: sessions, requests, traces, memory and skills (no modules, no build step).
// Every text from a model, a tool or a file goes into the page through textContent
// (the h() helper in base.js); nothing untrusted is ever parsed as HTML.
"use strict";

// -- sessions ------------------------------------------------------------------------

async function sessionsPage(parts) {
  const agent = agentParts(parts);
  const data = await api("GET", `/ui/api/agents/${encodeURIComponent(agent)}/sessions`);
  const rows = data.sessions.map((item) => {
    const exportButton = h("button", { class: "export", onclick: async () => {
      const session = await api("GET", `/agents/${encodeURIComponent(agent)}/sessions/${encodeURIComponent(item.id)}`);
      const blob = new Blob([JSON.stringify(session, null, 2)], { type: "application/json" });
      const link = h("a", { href: URL.createObjectURL(blob), download: `${item.id}.json` });
      document.body.append(link); link.click(); link.remove();
    } }, "Export JSON");
    const deleteButton = h("button", { class: "danger delete", onclick: async () => {
      if (!confirm(`Delete session ${item.id}?`)) return;
      try { await api("DELETE", `/agents/${encodeURIComponent(agent)}/sessions/${encodeURIComponent(item.id)}`); route(); }
      catch (error) { notice(error.message); }
    } }, "Delete");
    return h("tr", { "data-session": item.id },
      h("td", {}, h("a", { href: `#/chat/${encodeURIComponent(agent)}/${encodeURIComponent(item.id)}`, class: "open" }, item.id)),
      h("td", {}, item.title), h("td", {}, String(item.messages)),
      h("td", {}, item.pending ? h("span", { class: "badge" }, `${item.pending} awaiting approval`) : ""),
      h("td", { class: "row" }, h("button", { class: "replay", onclick: () => go(`#/sessions/${encodeURIComponent(agent)}/${encodeURIComponent(item.id)}/replay`) }, "Replay"),
        h("button", { class: "save-case", title: "Save a turn of this session as an eval case", onclick: () => go(`#/chat/${encodeURIComponent(agent)}/${encodeURIComponent(item.id)}/case`) }, "Save as eval case"),
        exportButton, deleteButton));
  });
  const table = h("table", { id: "sessions" }, h("tr", {}, h("th", {}, "Session"), h("th", {}, "First message"), h("th", {}, "Messages"), h("th", {}, ""), h("th", {}, "")), ...rows);
  const replay = h("div", { id: "replay" });
  show(h("h2", {}, `Sessions of ${agent}`), rows.length ? table : h("p", { class: "muted" }, "No stored sessions yet."), replay);
  if (parts[1] && parts[2] === "replay") await replaySession(agent, parts[1], replay);
  document.body.dataset.ready = "sessions";
}

// Replays a stored session message by message, as it happened.
async function replaySession(agent, sessionId, box) {
  const session = await api("GET", `/agents/${encodeURIComponent(agent)}/sessions/${encodeURIComponent(sessionId)}`);
  const list = h("div", { class: "transcript" });
  const step = h("span", { class: "muted", id: "replay-step" });
  box.replaceChildren(h("h3", {}, `Replay of ${sessionId} `, step), list);
  const messages = session.messages.filter((m) => m.role !== "system");
  const calls = new Map();
  for (let i = 0; i < messages.length; i++) {
    const view = messageView(messages[i], calls);
    if (view) list.append(view);
    step.textContent = `${i + 1} / ${messages.length}`;
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
  box.dataset.done = "true";
}

// -- the requests the model saw ------------------------------------------------------

async function pickSession(agent, current, page) {
  const data = await api("GET", `/ui/api/agents/${encodeURIComponent(agent)}/sessions`);
  const select = h("select", { "aria-label": "session", onchange: () => go(`#/${page}/${encodeURIComponent(agent)}/${encodeURIComponent(select.value)}`) },
    h("option", { value: "" }, "choose a session"),
    ...data.sessions.map((item) => h("option", { value: item.id, selected: item.id === current }, `${item.id} — ${item.title}`)));
  return select;
}

async function requestsPage(parts) {
  const agent = agentParts(parts);
  const sessionId = parts[1] || state.sessionId;
  const picker = await pickSession(agent, sessionId, "requests");
  const out = [h("h2", {}, "The requests the model saw"), h("div", { class: "row" }, "Session ", picker)];
  if (sessionId) {
    const data = await api("GET", `/ui/api/agents/${encodeURIComponent(agent)}/sessions/${encodeURIComponent(sessionId)}/runs`);
    if (!data.runs.length) out.push(h("p", { class: "muted" }, "No runs of this session were recorded by this server (runs are recorded in memory while it runs)."));
    data.runs.forEach((run, turn) => {
      out.push(h("h3", {}, `Turn ${turn + 1}`));
      for (const request of run.requests) {
        const usage = request.usage ? `${request.usage.input_tokens} in / ${request.usage.output_tokens} out tokens (reported)` : `≈${request.estimated_input_tokens} input tokens (estimated)`;
        out.push(h("details", { class: "card request", open: turn === data.runs.length - 1 },
          h("summary", {}, `Model call ${request.index}: ${request.messages.length} messages, ${request.tools.length} tools, ${usage}`),
          h("div", {}, "System prompt (after every context provider)"), h("pre", { class: "system" }, request.system || "(none)"),
          h("div", {}, "Tools offered"),
          h("ul", { class: "tools" }, ...request.tools.map((t) => h("li", {}, h("details", {}, h("summary", {}, `${t.name} `, h("span", { class: "muted" }, t.description)), h("pre", {}, pretty(t.parameters)))))),
          h("div", {}, "Options"), h("pre", {}, pretty(request.options)),
          h("details", {}, h("summary", {}, "Messages sent"), h("pre", { class: "messages" }, pretty(request.messages)))));
      }
    });
  }
  show(...out);
  document.body.dataset.ready = "requests";
}

// -- traces --------------------------------------------------------------------------

// One run's span tree: each bar is placed inside its parent's bar, on the parent's time
// scale, so a child never runs past its parent (clocks of nested spans differ by a hair).
function drawTrace(run, barWidth = 300) {
  const tree = h("div", { class: "trace" });
  const root = run.spans.find((sp) => sp.parent === null);
  if (!root) return tree;
  const children = (id) => run.spans.filter((sp) => sp.parent === id);
  const draw = (span, depth, parent) => {
    const ms = span.duration_ms;
    let left = 0;
    let width = barWidth;
    if (parent) {
      const scale = parent.width / parent.ms;
      left = Math.min(parent.left + Math.max(0, (span.start - parent.start) * 1000 * scale), parent.left + parent.width - 2);
      width = Math.max(2, Math.min((ms === null ? parent.ms : ms) * scale, parent.left + parent.width - left));
    }
    tree.append(h("div", { class: "span-row", "data-kind": span.kind, "data-id": span.id, "data-parent": span.parent || "" },
      // the indent is inside the name's column, so every row's bar track starts at one x
      h("span", { class: "span-name", style: `padding-left:${16 * depth}px`, title: span.name }, span.name),
      h("span", { class: "track", style: `width:${barWidth + 20}px` },
        h("span", { class: `bar ${span.kind}${span.error ? " err" : ""}`, "data-left": left.toFixed(1), "data-width": width.toFixed(1), style: `position:absolute;left:${left.toFixed(1)}px;width:${width.toFixed(1)}px;top:.2rem` })),
      h("span", { class: "duration" }, ms === null ? "running" : `${ms.toFixed(1)} ms`),
      span.error ? h("span", { class: "badge bad" }, span.error) : ""));
    const box = { left, width, start: span.start, ms: Math.max(ms === null ? (parent ? parent.ms : 1) : ms, 0.001) };
    for (const child of children(span.id)) draw(child, depth + 1, box);
  };
  draw(root, 0, null);
  return tree;
}

async function tracesPage(parts) {
  const agent = agentParts(parts);
  const sessionId = parts[1] || state.sessionId;
  const picker = await pickSession(agent, sessionId, "traces");
  const source = h("p", { class: "muted", id: "trace-source" });
  const out = [h("h2", {}, "Traces"), source, h("div", { class: "row" }, "Session ", picker)];
  if (sessionId) {
    const data = await api("GET", `/ui/api/agents/${encodeURIComponent(agent)}/sessions/${encodeURIComponent(sessionId)}/traces`);
    source.textContent = data.source === "opentelemetry"
      ? "OpenTelemetry GenAI spans (invoke_agent, chat, execute_tool) kept in the server's memory."
      : "Spans recorded by the server's run middleware: the run, each model call, each tool call (install the otel extra for OpenTelemetry spans).";
    source.dataset.source = data.source;
    for (const run of data.runs) {
      out.push(h("h3", {}, `${run.agent} at ${new Date(run.started * 1000).toLocaleTimeString()}`), drawTrace(run));
    }
  }
  show(...out);
  document.body.dataset.ready = "traces";
}

// -- memory and skills ---------------------------------------------------------------

async function memoryPage(parts) {
  const agent = agentParts(parts);
  const data = await api("GET", `/ui/api/agents/${encodeURIComponent(agent)}/memory`);
  const out = [h("h2", {}, `Memory and skills of ${agent}`), h("p", { class: "muted" }, "Read-only views of the super-brain folders and the skill folders.")];
  out.push(h("h3", {}, "Memory"));
  if (!data.memory.length) out.push(h("p", { class: "muted" }, "This agent has no memory provider."));
  for (const folder of data.memory) {
    out.push(h("div", { class: "muted" }, `${folder.provider}: ${folder.folder}`));
    for (const file of folder.files) out.push(h("details", { class: "card memory-file" }, h("summary", {}, file.path), h("pre", {}, file.text)));
  }
  out.push(h("h3", {}, "Skills"));
  if (!data.skills.length) out.push(h("p", { class: "muted" }, "This agent has no skills."));
  for (const skill of data.skills) {
    out.push(h("details", { class: "card skill" }, h("summary", {}, h("strong", {}, skill.name), " ", h("span", { class: "muted" }, skill.description)),
      skill.folder ? h("div", { class: "muted" }, skill.folder) : "", h("pre", {}, skill.instructions),
      skill.files.length ? h("div", {}, `Files: ${skill.files.join(", ")}`) : ""));
  }
  show(...out);
  document.body.dataset.ready = "memory";
}
