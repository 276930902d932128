"""The web UI's speed in a real browser (Debian's chromium through Playwright, as the tests):

- first paint of the chat page, and the time until it is usable (agents loaded), each
  load in a fresh profile, against a one-line HTML page served by the same server;
- how long a streamed token takes from the moment the model hands it to the server until
  it is in the page, against the same stream read by a bare HTTP client in this process.

The agent's model yields numbered tokens at a steady pace and records when it yields
each; the page's MutationObserver records when each appears. Both clocks are this
machine's wall clock.

    python benchmarks/ui_latency.py [--loads 10] [--tokens 100] [--pace 0.02]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
from fastapi.responses import HTMLResponse

from raf import AgentBuilder
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.responses import AgentResponseUpdate, ChatResponse, UpdateKind
from raf.serve import AgentHost, ServeSecurity, create_app, serve_in_thread
from raf.serve.ui import ServeUI

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class PacedTokens:
    """A model that streams `count` numbered tokens, `pace` seconds apart, noting when
    each was handed on."""

    def __init__(self, count: int, pace: float) -> None:
        self.count = count
        self.pace = pace
        self.sent: dict[str, float] = {}
        self.lock = threading.Lock()

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        raise NotImplementedError("the benchmark streams")

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        run = messages[-1].text
        for index in range(self.count):
            await asyncio.sleep(self.pace)
            token = f"{run}t{index}."
            with self.lock:
                self.sent[token] = time.time() * 1000
            yield AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, text=token, message_id="m")


OBSERVER = """() => {
  window.__seen = {};
  const record = () => {
    const now = performance.timeOrigin + performance.now();
    for (const node of document.querySelectorAll('.msg.assistant .text')) {
      for (const token of node.textContent.split('.')) {
        if (token && !((token + '.') in window.__seen)) window.__seen[token + '.'] = now;
      }
    }
  };
  new MutationObserver(record).observe(document.getElementById('transcript'),
    {childList: true, subtree: true, characterData: true});
}"""

PAINT = """() => {
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  return paint ? paint.startTime : null;
}"""


PAINTED = "() => performance.getEntriesByName('first-contentful-paint').length > 0"


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    return (
        f"median {statistics.median(ordered):6.1f} ms  p95 {p95:6.1f} ms  max {ordered[-1]:6.1f} ms"
    )


def first_paint(playwright: Any, url: str, loads: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"reference page": [], "chat page": [], "chat usable": []}
    for _ in range(loads):
        for name, path in (("reference page", "/reference"), ("chat page", "/ui#/chat/bench")):
            with tempfile.TemporaryDirectory() as profile:
                context = playwright.chromium.launch_persistent_context(
                    profile, executable_path=CHROMIUM, args=ARGS, headless=True
                )
                page = context.new_page()
                page.goto(url + path)
                if name == "chat page":
                    page.wait_for_selector("body[data-ready=chat]")
                    usable = page.evaluate(
                        "() => performance.getEntriesByName('raf:chat-ready')[0].startTime"
                    )
                    out["chat usable"].append(float(usable))
                page.wait_for_function(PAINTED)
                out[name].append(float(page.evaluate(PAINT)))
                context.close()
    return out


def token_latency(playwright: Any, url: str, model: PacedTokens) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as profile:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=ARGS, headless=True
        )
        page = context.new_page()
        page.goto(url + "/ui#/chat/bench")
        page.wait_for_selector("body[data-ready=chat]")
        page.evaluate(OBSERVER)
        page.fill("#prompt", "page")
        page.click("#send")
        page.wait_for_selector(f"text=paget{model.count - 1}.", timeout=120_000)
        seen: dict[str, float] = page.evaluate("() => window.__seen")
        context.close()
    in_page = [seen[t] - model.sent[t] for t in seen if t in model.sent and t.startswith("page")]

    # the reference: the same stream read by a bare client
    received: dict[str, float] = {}
    with httpx.Client(base_url=url, timeout=120) as client:
        session = client.post("/agents/bench/sessions", json={}).json()["id"]
        body = {"messages": "http", "stream": True}
        with client.stream("POST", f"/agents/bench/sessions/{session}/runs", json=body) as r:
            for line in r.iter_lines():
                if line.startswith("data:"):
                    data = json.loads(line[5:])
                    if data.get("kind") == "text_delta":
                        received[data["text"]] = time.time() * 1000
    over_http = [received[t] - model.sent[t] for t in received]
    return {"bare HTTP client": over_http, "in the page": in_page}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--pace", type=float, default=0.02)
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    model = PacedTokens(args.tokens, args.pace)
    agent = AgentBuilder().with_name("bench").with_chat_client(model).build()
    host = AgentHost([agent])
    app = create_app(host, ServeSecurity.for_bind("127.0.0.1"), ui=ServeUI.attach(host))
    inner: Any = app.app  # type: ignore[attr-defined]  # the FastAPI app inside the middleware

    async def reference() -> HTMLResponse:
        return HTMLResponse("<!doctype html><title>r</title><p>reference</p>")

    inner.add_api_route("/reference", reference, methods=["GET"])

    with serve_in_thread(app) as url, sync_playwright() as playwright:
        paints = first_paint(playwright, url, args.loads)
        tokens = token_latency(playwright, url, model)
    print(f"first paint, fresh profile each time, {args.loads} loads:")
    for name, values in paints.items():
        print(f"  {name:16} {summary(values)}")
    print(f"streamed token, model -> reader, {args.tokens} tokens {args.pace * 1000:.0f} ms apart:")
    for name, values in tokens.items():
        print(f"  {name:16} {summary(values)}  ({len(values)} tokens)")


if __name__ == "__main__":
    main()
