// raf's local web UI: routing and start (loaded last) (no modules, no build step).
// Every text from a model, a tool or a file goes into the page through textContent
// (the h() helper in base.js); nothing untrusted is ever parsed as HTML.
"use strict";

// -- routing -------------------------------------------------------------------------

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const page = parts[0] || "chat";
  state.page = page;
  document.getElementById("main").classList.toggle("wide", page === "chat");
  for (const link of document.querySelectorAll("nav a")) {
    link.classList.toggle("active", link.dataset.page === page);
  }
  const pages = { chat: chatPage, sessions: sessionsPage, requests: requestsPage, traces: tracesPage, workflows: workflowsPage, memory: memoryPage, evals: evalsPage };
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

// -- start ---------------------------------------------------------------------------

let booted = false;
applyTheme();
document.getElementById("theme").addEventListener("click", toggleTheme);
if (window.matchMedia) window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", applyTheme);

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
    if (error instanceof ApiError && error.code === "too_many_auth_failures") {
      sessionStorage.removeItem(TOKEN_KEY);
      askToken(error.message);  // the server says how long to wait; asking again waits for the person
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
