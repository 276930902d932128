// raf's local web UI: base: state, DOM helpers, HTTP and reconnection (no modules, no build step).
// Every text from a model, a tool or a file goes into the page through textContent
// (the h() helper in base.js); nothing untrusted is ever parsed as HTML.
"use strict";

const state = { catalog: null, agent: null, page: "chat", sessionId: null, cards: new Map() };
// Arguments of calls seen on this page: a call resumed after approval arrives without them.
const knownArguments = new Map();

// -- theme ---------------------------------------------------------------------------

// The page follows the system's light or dark setting until the theme button is used;
// the choice is then kept for this browser.
const THEME_KEY = "raf-theme";
function systemTheme() {
  return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}
function applyTheme() {
  const chosen = localStorage.getItem(THEME_KEY);
  const theme = chosen === "dark" || chosen === "light" ? chosen : systemTheme();
  document.documentElement.dataset.theme = theme;
  const button = document.getElementById("theme");
  if (button) button.textContent = theme === "dark" ? "Light theme" : "Dark theme";
}
function toggleTheme() {
  localStorage.setItem(THEME_KEY, document.documentElement.dataset.theme === "dark" ? "light" : "dark");
  applyTheme();
}

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
  // the server takes a browser's POST only when it says JSON, body or not
  if (method !== "GET") init.headers["content-type"] = "application/json";
  if (body !== undefined) init.body = JSON.stringify(body);
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
