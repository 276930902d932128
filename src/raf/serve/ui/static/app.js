// raf's local web UI: plain modules-free JavaScript, no build step.
// Every text from a model, a tool or a file goes into the page through textContent
// (the h() helper below); nothing untrusted is ever parsed as HTML.
"use strict";

const state = { catalog: null, agent: null, page: "chat", sessionId: null };
// Arguments of calls seen on this page: a call resumed after approval arrives without them.
const knownArguments = new Map();

// -- DOM helpers ---------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "style") el.style.cssText = value; // CSSOM: allowed by the page's CSP
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, String(value));
  for (const child of children) el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return el;
}

function pretty(value) {
  if (typeof value === "string") return value;
  try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); }
}

function show(...nodes) {
  const main = document.getElementById("main");
  main.replaceChildren(...nodes);
}

function notice(text) {
  const box = document.getElementById("notice");
  if (!text) { box.hidden = true; box.textContent = ""; return; }
  box.textContent = text;
  box.hidden = false;
}

function setConn(text, down) {
  const el = document.getElementById("conn");
  el.textContent = text;
  el.classList.toggle("down", Boolean(down));
}

// -- HTTP ----------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || `HTTP ${status}`);
    this.status = status;
    this.code = body && body.error && body.error.code;
  }
}

// A server beyond loopback wants a bearer token: the page asks for it once and keeps it
// for this tab only (sessionStorage), sending it with every request.
const TOKEN_KEY = "raf-token";
function authHeaders(extra) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return Object.assign(token ? { authorization: `Bearer ${token}` } : {}, extra || {});
}

function askToken(message) {
  const input = h("input", { type: "password", id: "token", "aria-label": "token", autocomplete: "off" });
  const form = h("form", { class: "row", id: "token-form" }, "Token ", input, h("button", { class: "primary", type: "submit" }, "Sign in"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    notice("");
    boot();
  });
  show(h("h2", {}, "This server needs a token"), h("p", { class: "muted" }, message), form);
}

async function api(method, path, body) {
  const init = { method, headers: authHeaders() };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// Reads a server-sent event stream from a fetch response; calls onEvent(name, data).
async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

function lost(message) {
  const error = new Error(message);
  error.lost = true; // already reported by reconnect()
  return error;
}

// The server went away: say so, and poll until it answers again, then call `then`.
let reconnecting = false;
async function reconnect(then) {
  if (reconnecting) return;
  reconnecting = true;
  setConn("Connection lost: reconnecting…", true);
  notice("The server stopped answering. Reconnecting…");
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    try {
      const response = await fetch("/health", { cache: "no-store" });
      if (response.ok) break;
    } catch (e) { /* still down */ }
  }
  reconnecting = false;
  setConn("Reconnected", false);
  notice("Reconnected to the server. The interrupted answer was not stored; the session is shown as saved.");
  if (then) await then();
}

// -- routing -------------------------------------------------------------------------

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const page = parts[0] || "chat";
  state.page = page;
  for (const link of document.querySelectorAll("nav a")) {
    link.classList.toggle("active", link.dataset.page === page);
  }
  const pages = { chat: chatPage, sessions: sessionsPage, requests: requestsPage, traces: tracesPage, workflows: workflowsPage, memory: memoryPage };
  (pages[page] || chatPage)(parts.slice(1)).catch((error) => {
    if (error instanceof TypeError) reconnect(route);
    else show(h("p", { class: "notice" }, String(error.message || error)));
  });
}

function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function agentParts(parts) {
  if (parts[0] && state.catalog.agents.some((a) => a.name === parts[0])) {
    state.agent = parts[0];
    document.getElementById("agent-picker").value = parts[0];
  }
  return state.agent;
}

// -- chat ----------------------------------------------------------------------------

function messageView(message, calls) {
  const box = h("div", { class: `msg ${message.role}`, "data-role": message.role }, h("span", { class: "role" }, message.author_name || message.role));
  for (const content of message.contents) {
    if (content.type === "text") box.append(h("span", { class: "text" }, content.text));
    else if (content.type === "reasoning") box.append(h("details", { class: "reasoning" }, h("summary", {}, "Reasoning"), content.text));
    else if (content.type === "function_call") {
      knownArguments.set(content.call_id, content.arguments);
      const card = toolCard(content.call_id, content.name, content.arguments);
      calls.set(content.call_id, card);
      box.append(card.root);
    } else if (content.type === "function_result") {
      const card = calls.get(content.call_id) || toolCard(content.call_id, content.name || "tool", null);
      if (!calls.has(content.call_id)) { calls.set(content.call_id, card); box.append(card.root); }
      card.result(content);
    } else if (content.type === "approval_response") {
      box.append(h("div", { class: "muted" }, `${content.approved ? "Approved" : "Denied"} ${content.call_id}${content.reason ? `: ${content.reason}` : ""}`));
    } else if (content.type === "error") box.append(h("div", { class: "card error" }, `Error: ${content.message}`));
  }
  // a tool message whose results all went into the cards of their calls shows nothing more
  if (message.role === "tool" && box.childNodes.length === 1) return null;
  return box;
}

function toolCard(callId, name, args) {
  const started = performance.now();
  const status = h("span", { class: "badge" }, "running");
  const duration = h("span", { class: "muted duration" });
  const argsBlock = h("pre", { class: "args" }, args === null ? "" : pretty(args));
  const resultBlock = h("pre", { class: "result" });
  const root = h("details", { class: "card tool", "data-call": callId },
    h("summary", {}, "Tool ", h("strong", {}, name), " ", status, " ", duration),
    h("div", {}, "Arguments"), argsBlock, h("div", {}, "Result"), resultBlock);
  return {
    root,
    arguments(value) { argsBlock.textContent = pretty(value); },
    awaiting() { status.textContent = "awaiting approval"; },
    result(content, live) {
      if (content.error !== undefined) {
        status.textContent = "error"; status.className = "badge bad"; root.classList.add("error");
        resultBlock.textContent = content.error;
      } else {
        status.textContent = "done"; status.className = "badge ok";
        resultBlock.textContent = pretty(content.result);
      }
      if (live) duration.textContent = `${Math.round(performance.now() - started)} ms`;
    },
  };
}

function approvalView(request, agent, sessionId, onDone) {
  const reason = h("input", { type: "text", placeholder: "reason (for a denial)", "aria-label": "reason" });
  const result = h("span", { class: "approval-result", role: "status" });
  const buttons = [];
  async function decide(approved) {
    for (const b of buttons) b.disabled = true;
    const answer = { call_id: request.call_id, approved };
    if (!approved && reason.value.trim()) answer.reason = reason.value.trim();
    try {
      await streamRun(agent, sessionId, `/agents/${encodeURIComponent(agent)}/sessions/${encodeURIComponent(sessionId)}/approvals`, { responses: [answer], stream: true });
      box.classList.add("done");
      result.textContent = approved ? "Approved" : "Denied";
      for (const badge of document.querySelectorAll(`.card.tool[data-call="${CSS.escape(request.call_id)}"] .badge`)) {
        if (badge.textContent === "awaiting approval") badge.textContent = approved ? "approved" : "denied";
      }
      if (onDone) onDone();
    } catch (error) {
      if (error.lost) { for (const b of buttons) b.disabled = false; return; }
      result.textContent = `Refused: ${error.message}`;
      result.classList.add("bad");
      for (const b of buttons) b.disabled = false;
    }
  }
  buttons.push(h("button", { class: "primary approve", onclick: () => decide(true) }, "Approve"));
  buttons.push(h("button", { class: "danger deny", onclick: () => decide(false) }, "Deny"));
  const box = h("div", { class: "approval", "data-call": request.call_id },
    h("div", {}, "Approval needed: ", h("strong", {}, request.name), request.reason ? ` (${request.reason})` : ""),
    h("pre", {}, pretty(request.arguments)),
    h("div", { class: "row" }, ...buttons, reason, result));
  return box;
}

// Runs a streamed request and draws its updates into the transcript.
async function streamRun(agent, sessionId, path, body) {
  const transcript = document.getElementById("transcript");
  const cancel = document.getElementById("cancel");
  let response;
  try {
    response = await fetch(path, { method: "POST", headers: authHeaders({ "content-type": "application/json" }), body: JSON.stringify(body) });
  } catch (error) {
    reconnect(() => openSession(agent, sessionId));
    throw lost("the server is not reachable");
  }
  if (!response.ok) {
    const data = await response.json().catch(() => null);
    throw new ApiError(response.status, data);
  }
  if (cancel) cancel.disabled = false;
  const bubble = h("div", { class: "msg assistant streaming", "data-role": "assistant" }, h("span", { class: "role" }, agent));
  transcript.append(bubble);
  let text = null;
  let reasoning = null;
  const cards = new Map();
  const approvals = [];
  let failed = null;
  try {
    await readEvents(response, (name, data) => {
      if (name === "error") { failed = data.error ? data.error.message : "the run failed"; return; }
      if (name !== "update") return;
      const kind = data.kind;
      if (kind === "text_delta" && data.text) {
        if (!text) { text = h("span", { class: "text" }); bubble.append(text); }
        text.append(document.createTextNode(data.text));
      } else if (kind === "reasoning_delta" && data.reasoning) {
        if (!reasoning) {
          reasoning = h("details", { class: "reasoning" }, h("summary", {}, "Reasoning"));
          bubble.append(reasoning);
        }
        reasoning.append(document.createTextNode(data.reasoning));
      } else if (kind === "tool_call_ended" || kind === "tool_calling") {
        const c = data.content || {};
        const id = c.call_id || data.call_id;
        if (c.arguments) knownArguments.set(id, c.arguments);
        if (!cards.has(id)) {
          const card = toolCard(id, c.name || data.tool_name, c.arguments || knownArguments.get(id) || {});
          cards.set(id, card);
          bubble.append(card.root);
          text = null;
        } else if (c.arguments) cards.get(id).arguments(c.arguments);
      } else if (kind === "tool_called") {
        const c = data.content || {};
        const id = c.call_id || data.call_id;
        let card = cards.get(id);
        if (!card) { card = toolCard(id, c.name || data.tool_name, null); cards.set(id, card); bubble.append(card.root); }
        card.result(c, true);
        text = null;
      } else if (kind === "finished" && data.finish_reason === "cancelled") {
        bubble.append(h("div", { class: "badge bad cancelled" }, "cancelled"));
      } else if (kind === "approval_request") {
        approvals.push(data.content);
        knownArguments.set(data.content.call_id, data.content.arguments);
        const card = cards.get(data.content.call_id);
        if (card) card.awaiting();
      }
    });
  } catch (error) {
    bubble.classList.remove("streaming");
    if (cancel) cancel.disabled = true;
    reconnect(() => openSession(agent, sessionId));
    throw lost("the connection was lost mid-answer");
  }
  bubble.classList.remove("streaming");
  if (cancel) cancel.disabled = true;
  if (failed) bubble.append(h("div", { class: "card error" }, `Error: ${failed}`));
  for (const request of approvals) transcript.append(approvalView(request, agent, sessionId));
  return { approvals };
}

async function openSession(agent, sessionId) {
  const transcript = document.getElementById("transcript");
  if (!transcript) return;
  const session = await api("GET", `/agents/${encodeURIComponent(agent)}/sessions/${encodeURIComponent(sessionId)}`);
  const calls = new Map();
  transcript.replaceChildren(...session.messages.filter((m) => m.role !== "system").map((m) => messageView(m, calls)).filter(Boolean));
  for (const request of session.pending_approvals) knownArguments.set(request.call_id, request.arguments);
  for (const request of session.pending_approvals) transcript.append(approvalView(request, agent, sessionId));
}

async function chatPage(parts) {
  const agent = agentParts(parts);
  if (!agent) { show(h("p", { class: "muted" }, "No agents are served.")); return; }
  let sessionId = parts[1] || null;
  state.sessionId = sessionId;
  const transcript = h("div", { class: "transcript", id: "transcript" });
  const input = h("textarea", { id: "prompt", placeholder: `Message ${agent}…`, "aria-label": "message" });
  const send = h("button", { class: "primary", id: "send" }, "Send");
  const cancel = h("button", { id: "cancel", disabled: true }, "Cancel");
  const info = h("span", { class: "muted", id: "session-label" }, sessionId ? `Session ${sessionId}` : "New session");
  async function submit() {
    const text = input.value.trim();
    if (!text) return;
    send.disabled = true;
    notice("");
    try {
      if (!sessionId) {
        const created = await api("POST", `/agents/${encodeURIComponent(agent)}/sessions`, {});
        sessionId = created.id;
        state.sessionId = sessionId;
        history.replaceState(null, "", `#/chat/${encodeURIComponent(agent)}/${encodeURIComponent(sessionId)}`);
        info.textContent = `Session ${sessionId}`;
      }
      input.value = "";
      transcript.append(h("div", { class: "msg user", "data-role": "user" }, h("span", { class: "role" }, "user"), h("span", { class: "text" }, text)));
      await streamRun(agent, sessionId, `/agents/${encodeURIComponent(agent)}/sessions/${encodeURIComponent(sessionId)}/runs`, { messages: text, stream: true });
    } catch (error) {
      if (!error.lost) notice(error.message);
    } finally {
      send.disabled = false;
    }
  }
  send.addEventListener("click", submit);
  input.addEventListener("keydown", (event) => { if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); submit(); } });
  cancel.addEventListener("click", async () => {
    try { await api("POST", `/agents/${encodeURIComponent(agent)}/sessions/${encodeURIComponent(sessionId)}/cancel`); }
    catch (error) { notice(error.message); }
  });
  show(h("h2", {}, `Chat with ${agent} `, info), transcript, input, h("div", { class: "row" }, send, cancel,
    h("a", { href: `#/requests/${encodeURIComponent(agent)}/${encodeURIComponent(sessionId || "")}`, id: "requests-link" }, "Requests the model saw")));
  if (sessionId) await openSession(agent, sessionId);
  document.body.dataset.ready = "chat";
  if (!performance.getEntriesByName("raf:chat-ready").length) performance.mark("raf:chat-ready");
}

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
      h("td", { class: "row" }, h("button", { class: "replay", onclick: () => go(`#/sessions/${encodeURIComponent(agent)}/${encodeURIComponent(item.id)}/replay`) }, "Replay"), exportButton, deleteButton));
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
      const root = run.spans.find((sp) => sp.parent === null);
      const total = Math.max(1, (root && root.duration_ms) || 1);
      const tree = h("div", { class: "trace" });
      const children = (id) => run.spans.filter((sp) => sp.parent === id);
      const draw = (span, depth) => {
        const offset = Math.min(298, Math.max(0, ((span.start - root.start) * 1000 / total) * 300));
        const width = Math.max(2, Math.min(300 - offset, ((span.duration_ms || 0) / total) * 300));
        tree.append(h("div", { class: "span-row", "data-kind": span.kind },
          h("span", { style: `width:${16 * depth}px;display:inline-block` }),
          h("span", { style: "width:14rem;display:inline-block" }, span.name),
          h("span", { style: `width:320px;display:inline-block;position:relative` }, h("span", { class: `bar ${span.kind}${span.error ? " err" : ""}`, style: `position:absolute;left:${offset.toFixed(1)}px;width:${width.toFixed(1)}px;top:.2rem` })),
          h("span", { class: "duration" }, span.duration_ms === null ? "running" : `${span.duration_ms.toFixed(1)} ms`),
          span.error ? h("span", { class: "badge bad" }, span.error) : ""));
        for (const child of children(span.id)) draw(child, depth + 1);
      };
      if (root) draw(root, 0);
      out.push(h("h3", {}, `${run.agent} at ${new Date(run.started * 1000).toLocaleTimeString()}`), tree);
    }
  }
  show(...out);
  document.body.dataset.ready = "traces";
}

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
  show(h("h2", {}, "Workflows"), tabs, h("p", { class: "muted" }, graph.description || ""), svg,
    h("div", { class: "row" }, input, start, step, status),
    h("div", { class: "grid" }, h("div", {}, h("h3", {}, "Waiting for input"), requests, h("h3", {}, "Events"), log), h("div", {}, h("h3", {}, "Checkpoints"), checkpoints)));
  await loadCheckpoints();
  document.body.dataset.ready = "workflows";
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

// -- start ---------------------------------------------------------------------------

let booted = false;
async function boot() {
  try {
    state.catalog = await api("GET", "/ui/api/catalog");
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      const had = sessionStorage.getItem(TOKEN_KEY);
      sessionStorage.removeItem(TOKEN_KEY);
      askToken(had ? "That token was refused; give another." : "Give one of the server's bearer tokens.");
      return;
    }
    await reconnect(boot);
    return;
  }
  const picker = document.getElementById("agent-picker");
  picker.replaceChildren(...state.catalog.agents.map((a) => h("option", { value: a.name }, a.name)));
  state.agent = state.catalog.agents.length ? state.catalog.agents[0].name : null;
  picker.addEventListener("change", () => {
    state.agent = picker.value;
    state.sessionId = null;
    const page = state.page === "workflows" ? "chat" : state.page;
    go(`#/${page}/${encodeURIComponent(picker.value)}`);
  });
  setConn("Connected", false);
  if (!booted) window.addEventListener("hashchange", route);
  booted = true;
  route();
}

boot();
