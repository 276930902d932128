"""The chat page as a developer's console: the events and trace panel beside the chat, the
conversation switcher, dark and light themes, why an approval is asked, trace bars inside
their parents, and no request the page makes going unanswered. Driven in Debian's
chromium by Playwright against `raf ui` as a program."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.serve.ui.browser import UiServer

REPLIES = json.dumps({"replies": [{"text": "Hello from the script.", "pace": 0.01}] * 10})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiServer]:
    running = UiServer(tmp_path_factory.mktemp("devui"), REPLIES)
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    opened = browser.new_page()
    errors: list[str] = []
    missing: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on(
        "response",
        lambda response: missing.append(response.url) if response.status == 404 else None,
    )
    yield opened
    opened.close()
    assert errors == []
    assert missing == [], "the page asked for something the server does not have"


def open_chat(page: Any, server: UiServer, agent: str = "clerk", session: str = "") -> None:
    page.goto(f"{server.url}/ui#/chat/{agent}" + (f"/{session}" if session else ""))
    page.wait_for_selector("body[data-ready=chat]")


def send(page: Any, text: str) -> None:
    """Send `text` and wait until its answer has streamed to the end (the user's message
    is drawn before the run starts; Send is enabled again once it ended)."""
    before = page.locator(".msg.user").count()
    page.fill("#prompt", text)
    page.click("#send")
    page.wait_for_function(
        "before => document.querySelectorAll('.msg.user').length > before"
        " && !document.querySelector('#send').disabled",
        arg=before,
    )


def test_the_events_panel_lists_each_streamed_event_with_its_time(
    page: Any, server: UiServer
) -> None:
    open_chat(page, server)
    assert page.locator("#side-panel").is_visible()
    send(page, "define tide")
    page.wait_for_selector("text=Done: tide")
    kinds = page.locator("#events li").evaluate_all("items => items.map(i => i.dataset.kind)")
    assert kinds[0] is None or kinds[0] == ""  # the request that started the run
    assert "tool_called" in kinds and "finished" in kinds
    assert kinds.index("tool_calling") < kinds.index("tool_called") < kinds.index("finished")
    called = page.locator("#events li[data-kind=tool_called] .what").first.inner_text()
    assert called.startswith("lookup →")
    times = page.locator("#events li .t").all_inner_texts()
    assert all(t.endswith(" ms") for t in times)
    # streamed text is one growing line per message, not one line per piece
    assert page.locator("#events li[data-kind=text_delta]").count() == 1
    assert "Done: tide" in page.locator("#events li[data-kind=text_delta]").inner_text()


def test_the_trace_tab_draws_the_last_run_with_children_inside_their_parents(
    page: Any, server: UiServer
) -> None:
    open_chat(page, server)
    send(page, "define pool")
    page.click("#side-panel button[data-tab=trace]")
    page.wait_for_selector("#panel-trace .trace .span-row")
    rows = page.locator("#panel-trace .span-row").evaluate_all(
        """rows => rows.map(r => { const bar = r.querySelector('.bar');
        return { id: r.dataset.id, parent: r.dataset.parent, kind: r.dataset.kind,
                 left: Number(bar.dataset.left), width: Number(bar.dataset.width) }; })"""
    )
    assert [r["kind"] for r in rows] == ["run", "model", "tool", "model"]
    boxes = {r["id"]: r for r in rows}
    for row in rows:
        if row["parent"]:
            parent = boxes[row["parent"]]
            assert row["left"] >= parent["left"] - 0.05
            assert row["left"] + row["width"] <= parent["left"] + parent["width"] + 0.05


def test_the_panel_can_be_hidden_and_stays_hidden(page: Any, server: UiServer) -> None:
    open_chat(page, server)
    page.click("#panel-toggle")
    assert not page.locator("#side-panel").is_visible()
    open_chat(page, server)
    assert not page.locator("#side-panel").is_visible()
    page.click("#panel-toggle")
    assert page.locator("#side-panel").is_visible()


def test_conversations_are_switched_and_a_new_one_started_from_the_chat(
    page: Any, server: UiServer
) -> None:
    open_chat(page, server)
    send(page, "first conversation")
    first = page.evaluate("location.hash.split('/')[3]")
    page.click("#new-conversation")
    page.wait_for_function("() => location.hash.split('/').length === 3")
    page.wait_for_selector("body[data-ready=chat]")
    # the new conversation's transcript is drawn after the address changes: wait for it
    # to be empty (it never is, should the old one stay)
    page.wait_for_function(
        "() => document.querySelectorAll('#transcript .msg').length === 0", timeout=10_000
    )
    send(page, "second conversation")
    second = page.evaluate("location.hash.split('/')[3]")
    assert second != first
    options = page.locator("#conversation option").evaluate_all("o => o.map(x => x.value)")
    assert first in options and second in options
    page.select_option("#conversation", first)
    page.wait_for_function("sid => location.hash.endsWith('/' + sid)", arg=first)
    page.wait_for_selector("text=You said: first conversation")
    assert page.locator("text=You said: second conversation").count() == 0


def test_the_theme_follows_the_system_until_chosen(browser: Any, server: UiServer) -> None:
    page = browser.new_page()
    page.emulate_media(color_scheme="dark")
    try:
        page.goto(f"{server.url}/ui#/chat/clerk")
        page.wait_for_selector("body[data-ready=chat]")
        page.evaluate("localStorage.removeItem('raf-theme')")
        page.reload()
        page.wait_for_selector("body[data-ready=chat]")
        assert page.evaluate("document.documentElement.dataset.theme") == "dark"
        dark = page.evaluate("getComputedStyle(document.body).backgroundColor")
        page.click("#theme")
        assert page.evaluate("document.documentElement.dataset.theme") == "light"
        light = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert dark != light
        page.reload()
        page.wait_for_selector("body[data-ready=chat]")
        assert page.evaluate("document.documentElement.dataset.theme") == "light"
    finally:
        page.evaluate("localStorage.removeItem('raf-theme')")
        page.close()


def test_an_approved_call_is_drawn_once_and_the_box_says_why(page: Any, server: UiServer) -> None:
    open_chat(page, server)
    page.fill("#prompt", "note water the plants")
    page.click("#send")
    approval = page.locator(".approval").last
    approval.wait_for()
    assert "Why:" in approval.locator(".why").inner_text()
    approval.locator("button.approve").click()
    page.wait_for_selector("text=Done: noted water the plants")
    page.wait_for_selector(".msg.streaming", state="detached")
    cards = page.locator(".card.tool")
    assert cards.count() == 1
    assert cards.first.locator(".badge").inner_text() == "done"
