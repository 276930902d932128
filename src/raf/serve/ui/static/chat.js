// raf's local web UI: the chat page (no modules, no build step).
// Every text from a model, a tool or a file goes into the page through textContent
// (the h() helper in base.js); nothing untrusted is ever parsed as HTML.
"use strict";

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
    else if (content.type === "data") box.append(mediaView(content));
  }
  // a tool message whose results all went into the cards of their calls shows nothing more
  if (message.role === "tool" && box.childNodes.length === 1) return null;
  return box;
}

// -- images and files ------------------------------------------------------------------

// Images are drawn from data: URLs only (the page's CSP allows no other image source), and
// only for the raster types a model takes; anything else is a chip that names it.
const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
const FAMILY_NAMES = { image: "image", audio: "audio", document: "document" };

function isMedia(value) {
  return value !== null && typeof value === "object" && value.type === "data" && typeof value.uri === "string";
}

function mediaFamily(type) {
  if (type.startsWith("image/")) return "image";
  if (type.startsWith("audio/")) return "audio";
  return "document";
}

function dataUriType(uri) {
  const match = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)[;,]/i.exec(uri);
  return match ? match[1].toLowerCase() : null;
}

function byteSize(uri) {
  const comma = uri.indexOf(",");
  if (!uri.startsWith("data:") || comma < 0 || !uri.slice(0, comma).endsWith(";base64")) return null;
  const body = uri.slice(comma + 1);
  return Math.floor(body.length * 3 / 4) - (body.endsWith("==") ? 2 : body.endsWith("=") ? 1 : 0);
}

function sizeText(bytes) {
  if (bytes === null || bytes === undefined) return "";
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function mediaView(content, fileName) {
  const inline = dataUriType(content.uri);
  const type = (content.media_type || inline || "application/octet-stream").toLowerCase();
  const size = byteSize(content.uri);
  const label = fileName || `${type}${size !== null ? `, ${sizeText(size)}` : ""}`;
  if (inline && IMAGE_TYPES.includes(inline) && inline === type) {
    return h("figure", { class: "attachment image", "data-type": type },
      h("img", { src: content.uri, alt: label }), h("figcaption", { class: "muted" }, label));
  }
  const chip = h("span", { class: "attachment chip", "data-type": type }, `${FAMILY_NAMES[mediaFamily(type)]}: ${label}`);
  if (/^https?:\/\//i.test(content.uri)) {
    chip.append(" ", h("a", { href: content.uri, target: "_blank", rel: "noopener noreferrer" }, "open"));
  }
  return chip;
}

// The files waiting to go with the next message: checked here (type, size) before any
// request, with the same limits the server keeps.
function attachmentPicker() {
  const limits = (state.catalog && state.catalog.attachments) || { types: IMAGE_TYPES, max_bytes: { image: 512 * 1024, audio: 512 * 1024, document: 512 * 1024 } };
  const pending = [];
  const input = h("input", { type: "file", id: "attach-input", multiple: true, accept: limits.types.join(","), hidden: true, "aria-label": "attach a file" });
  const button = h("button", { id: "attach", type: "button", title: `Attach an image, audio or PDF (${limits.types.join(", ")})`, onclick: () => input.click() }, "Attach");
  const list = h("span", { class: "attachments", id: "attachments" });
  function draw() {
    list.replaceChildren(...pending.map((file, index) => h("span", { class: "attachment chip pending", "data-name": file.name },
      `${file.name} (${sizeText(file.size)})`,
      h("button", { class: "remove", type: "button", "aria-label": `remove ${file.name}`, onclick: () => { pending.splice(index, 1); draw(); } }, "×"))));
  }
  input.addEventListener("change", () => {
    const refused = [];
    for (const file of input.files) {
      const type = (file.type || "").toLowerCase();
      if (!limits.types.includes(type)) {
        refused.push(`${file.name}: ${type || "an unknown type"} cannot be sent to a model (accepted: ${limits.types.join(", ")})`);
        continue;
      }
      const limit = limits.max_bytes[mediaFamily(type)];
      if (file.size > limit) {
        refused.push(`${file.name} is ${sizeText(file.size)}; the largest ${mediaFamily(type)} this server takes is ${sizeText(limit)}`);
        continue;
      }
      if (file.size === 0) { refused.push(`${file.name} is empty`); continue; }
      pending.push(file);
    }
    input.value = "";
    notice(refused.join("; "));
    draw();
  });
  return {
    elements: [button, input, list],
    files() { return pending.slice(); },
    clear() { pending.length = 0; draw(); },
  };
}

function readAsDataUri(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(new Error(`${file.name} could not be read`));
    reader.readAsDataURL(file);
  });
}

async function attachmentsOf(files) {
  const out = [];
  for (const file of files) {
    const uri = await readAsDataUri(file);
    const type = file.type.toLowerCase();
    out.push({ file, media_type: type, data: uri.slice(uri.indexOf(",") + 1), uri: `data:${type};base64,${uri.slice(uri.indexOf(",") + 1)}` });
  }
  return out;
}

function toolCard(callId, name, args) {
  let started = performance.now();
  const status = h("span", { class: "badge" }, "running");
  const duration = h("span", { class: "muted duration" });
  const argsBlock = h("pre", { class: "args" }, args === null ? "" : pretty(args));
  const resultBlock = h("pre", { class: "result" });
  const mediaBlock = h("div", { class: "media" });
  const root = h("details", { class: "card tool", "data-call": callId },
    h("summary", {}, "Tool ", h("strong", {}, name), " ", status, " ", duration),
    h("div", {}, "Arguments"), argsBlock, h("div", {}, "Result"), resultBlock, mediaBlock);
  return {
    root,
    arguments(value) { argsBlock.textContent = pretty(value); },
    awaiting() { status.textContent = "awaiting approval"; },
    running() { started = performance.now(); status.textContent = "running"; status.className = "badge"; },
    result(content, live) {
      if (content.error !== undefined) {
        status.textContent = "error"; status.className = "badge bad"; root.classList.add("error");
        resultBlock.textContent = content.error;
      } else {
        status.textContent = "done"; status.className = "badge ok";
        const parts = Array.isArray(content.result) ? content.result : [content.result];
        const media = parts.filter(isMedia);
        if (media.length) {
          resultBlock.textContent = parts.filter((p) => !isMedia(p) && p !== null && p !== undefined).map(pretty).join("\n");
          mediaBlock.replaceChildren(...media.map((m) => mediaView(m)));
        } else resultBlock.textContent = pretty(content.result);
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
    h("div", {}, "Approval needed: ", h("strong", {}, request.name)),
    h("div", { class: "why" }, `Why: ${request.reason || "this tool is marked as needing a person's approval for every call"}`),
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
  const cards = state.cards;
  const approvals = [];
  let failed = null;
  logRunStart(body);
  try {
    await readEvents(response, (name, data) => {
      logEvent(name, data);
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
        } else {
          // a call approved earlier in the conversation: its card is updated in place
          if (c.arguments) cards.get(id).arguments(c.arguments);
          if (kind === "tool_calling") cards.get(id).running();
        }
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
  if (bubble.childNodes.length === 1) bubble.remove(); // only resumed calls: drawn in place
  for (const request of approvals) transcript.append(approvalView(request, agent, sessionId));
  refreshTrace(agent, sessionId);
  return { approvals };
}

async function openSession(agent, sessionId) {
  const transcript = document.getElementById("transcript");
  if (!transcript) return;
  const session = await api("GET", `/agents/${encodeURIComponent(agent)}/sessions/${encodeURIComponent(sessionId)}`);
  const calls = new Map();
  state.cards = calls;
  transcript.replaceChildren(...session.messages.filter((m) => m.role !== "system").map((m) => messageView(m, calls)).filter(Boolean));
  // Only approvals still a person's to answer get buttons; a claimed one is a run's.
  const answerable = new Set((session.approvals || []).filter((a) => a.status === "pending").map((a) => a.call_id));
  const waiting = session.pending_approvals.filter((request) => answerable.has(request.call_id));
  for (const request of waiting) knownArguments.set(request.call_id, request.arguments);
  for (const request of waiting) transcript.append(approvalView(request, agent, sessionId));
  refreshTrace(agent, sessionId);
}

async function chatPage(parts) {
  const agent = agentParts(parts);
  if (!agent) { show(h("p", { class: "muted" }, "No agents are served.")); return; }
  let sessionId = parts[1] || null;
  state.sessionId = sessionId;
  state.cards = new Map();
  const transcript = h("div", { class: "transcript", id: "transcript" });
  const input = h("textarea", { id: "prompt", placeholder: `Message ${agent}…`, "aria-label": "message" });
  const send = h("button", { class: "primary", id: "send" }, "Send");
  const cancel = h("button", { id: "cancel", disabled: true }, "Cancel");
  const info = h("span", { class: "muted", id: "session-label" }, sessionId ? `Session ${sessionId}` : "New session");
  const picker = attachmentPicker();
  async function submit() {
    const text = input.value.trim();
    const files = picker.files();
    if (!text) {
      if (files.length) notice("Write a message to go with the attached file.");
      return;
    }
    send.disabled = true;
    notice("");
    let attached;
    try { attached = await attachmentsOf(files); }
    catch (error) { notice(error.message); send.disabled = false; return; }
    try {
      if (!sessionId) {
        const created = await api("POST", `/agents/${encodeURIComponent(agent)}/sessions`, {});
        sessionId = created.id;
        state.sessionId = sessionId;
        history.replaceState(null, "", `#/chat/${encodeURIComponent(agent)}/${encodeURIComponent(sessionId)}`);
        info.textContent = `Session ${sessionId}`;
        const picker = document.getElementById("conversation");
        if (picker) picker.append(h("option", { value: sessionId, selected: true }, `${text.slice(0, 80)} — ${sessionId}`));
      }
      input.value = "";
      picker.clear();
      transcript.append(h("div", { class: "msg user", "data-role": "user" }, h("span", { class: "role" }, "user"), h("span", { class: "text" }, text),
        ...attached.map((a) => mediaView({ type: "data", uri: a.uri, media_type: a.media_type }, a.file.name))));
      const body = { messages: text, stream: true };
      if (attached.length) body.attachments = attached.map((a) => ({ media_type: a.media_type, data: a.data }));
      await streamRun(agent, sessionId, `/agents/${encodeURIComponent(agent)}/sessions/${encodeURIComponent(sessionId)}/runs`, body);
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
  const conversations = await conversationPicker(agent, sessionId);
  const fresh = h("button", { id: "new-conversation", onclick: () => go(`#/chat/${encodeURIComponent(agent)}`) }, "New conversation");
  const panelToggle = h("button", { id: "panel-toggle", "aria-pressed": String(panelOpen()), onclick: () => {
    localStorage.setItem(PANEL_KEY, panelOpen() ? "closed" : "open");
    layout.classList.toggle("no-panel", !panelOpen());
    panelToggle.setAttribute("aria-pressed", String(panelOpen()));
  } }, "Events & trace");
  // a finished turn of this conversation saved as an eval case (the form is in evals.js)
  const caseBox = h("div", { id: "case-box" });
  const openCaseForm = async () => {
    if (!sessionId) { notice("Send a message first: a case is made from a finished turn."); return; }
    try { await caseForm(agent, sessionId, caseBox); } catch (error) { notice(error.message); }
  };
  const saveCase = h("button", { id: "save-case", type: "button", title: "Save a turn of this conversation as a case of an eval dataset", onclick: openCaseForm }, "Save as eval case");
  const column = h("div", { class: "chat-column" },
    h("h2", {}, `Chat with ${agent} `, info),
    h("div", { class: "conversation" }, "Conversation ", conversations, fresh, panelToggle),
    transcript, input, h("div", { class: "row" }, send, cancel, ...picker.elements, saveCase,
      h("a", { href: `#/requests/${encodeURIComponent(agent)}/${encodeURIComponent(sessionId || "")}`, id: "requests-link" }, "Requests the model saw")),
    caseBox);
  const layout = h("div", { class: `chat-layout${panelOpen() ? "" : " no-panel"}` }, column, sidePanel());
  show(layout);
  if (sessionId) await openSession(agent, sessionId);
  if (sessionId && parts[2] === "case") await openCaseForm();
  document.body.dataset.ready = "chat";
  if (!performance.getEntriesByName("raf:chat-ready").length) performance.mark("raf:chat-ready");
}

// -- conversations -------------------------------------------------------------------

async function conversationPicker(agent, current) {
  const data = await api("GET", `/ui/api/agents/${encodeURIComponent(agent)}/sessions`);
  const select = h("select", { id: "conversation", "aria-label": "conversation", onchange: () => {
    go(`#/chat/${encodeURIComponent(agent)}${select.value ? `/${encodeURIComponent(select.value)}` : ""}`);
  } }, h("option", { value: "" }, "new conversation"),
  ...data.sessions.map((item) => h("option", { value: item.id, selected: item.id === current }, `${item.title || "(no message yet)"} — ${item.id}`)));
  return select;
}

// -- the events and trace panel ------------------------------------------------------

// Every event of the answers streamed on this page, with its time since the run began,
// and the span tree of the conversation's last run: what the model and tools did, live.
const PANEL_KEY = "raf-panel";
function panelOpen() { return localStorage.getItem(PANEL_KEY) !== "closed"; }

function sidePanel() {
  const events = h("ol", { class: "events", id: "events" });
  const trace = h("div", { id: "panel-trace" }, h("p", { class: "muted" }, "The trace of the last run shows here."));
  const tabs = h("div", { class: "tabs", role: "tablist" });
  const panes = { events: h("div", { id: "pane-events" }, events), trace: h("div", { id: "pane-trace", hidden: true }, trace) };
  for (const [name, label] of [["events", "Events"], ["trace", "Trace"]]) {
    tabs.append(h("button", { class: name === "events" ? "active" : "", "data-tab": name, role: "tab", onclick: (event) => {
      for (const b of tabs.children) b.classList.toggle("active", b === event.currentTarget);
      for (const [key, pane] of Object.entries(panes)) pane.hidden = key !== name;
    } }, label));
  }
  return h("aside", { class: "side-panel", id: "side-panel" }, tabs, panes.events, panes.trace);
}

let runStarted = 0;
function logRunStart(body) {
  runStarted = performance.now();
  const list = document.getElementById("events");
  if (!list) return;
  const what = body.responses ? `answer ${body.responses.length} approval(s)` : `run: ${String(body.messages).slice(0, 60)}`;
  list.append(h("li", { class: "run-start" }, h("span", { class: "t" }, "0 ms"), h("span", {}, "request"), h("span", {}, what)));
}

function eventSummary(name, data) {
  if (name === "error") return data.error ? data.error.message : "the run failed";
  if (name === "run") return data.run_id || data.id || "";
  const c = data.content || {};
  switch (data.kind) {
    case "reasoning_delta": return `reasoning ${JSON.stringify(data.reasoning)}`;
    case "tool_call_started": case "tool_call_ended": case "tool_calling":
      return `${c.name || data.tool_name || ""} ${c.arguments ? JSON.stringify(c.arguments) : ""}`;
    case "tool_called": return `${c.name || data.tool_name || ""} → ${c.error !== undefined ? `error: ${c.error}` : JSON.stringify(c.result)}`;
    case "approval_request": return `${c.name} waits for approval`;
    case "usage": return data.usage ? `${data.usage.input_tokens} in / ${data.usage.output_tokens} out tokens` : "";
    case "finished": return data.finish_reason || "";
    default: return "";
  }
}

function logEvent(name, data) {
  const list = document.getElementById("events");
  if (!list) return;
  const kind = name === "update" ? data.kind : name;
  const summary = eventSummary(name, data);
  const last = list.lastElementChild;
  // deltas arrive a few characters at a time: one line per streamed message or call's
  // arguments, growing, with the time of its first piece
  const piece = kind === "text_delta" ? data.text : kind === "tool_call_arguments_delta" ? data.arguments_delta : null;
  const key = `${data.message_id || ""}/${data.call_id || ""}`;
  if (piece !== null && last && last.dataset.kind === kind && last.dataset.key === key) {
    const what = last.querySelector(".what");
    what.dataset.text = (what.dataset.text || "") + (piece || "");
    what.textContent = JSON.stringify(what.dataset.text).slice(0, 400);
    return;
  }
  const item = h("li", { "data-kind": kind, "data-key": key },
    h("span", { class: "t" }, `${Math.round(performance.now() - runStarted)} ms`),
    h("span", { class: "kind" }, kind.replace(/_/g, " ")), h("span", { class: "what" }, piece !== null ? JSON.stringify(piece || "") : summary.slice(0, 400)));
  if (piece !== null) item.querySelector(".what").dataset.text = piece || "";
  list.append(item);
  list.parentElement.scrollTop = list.parentElement.scrollHeight;
}

async function refreshTrace(agent, sessionId) {
  const box = document.getElementById("panel-trace");
  if (!box || !sessionId) return;
  try {
    const data = await api("GET", `/ui/api/agents/${encodeURIComponent(agent)}/sessions/${encodeURIComponent(sessionId)}/traces`);
    const run = data.runs[data.runs.length - 1];
    if (run) box.replaceChildren(h("div", { class: "muted" }, `Last run, ${new Date(run.started * 1000).toLocaleTimeString()}`), drawTrace(run, 120));
    box.dataset.runs = String(data.runs.length);
  } catch (error) { /* the panel is a view; the chat goes on */ }
}
