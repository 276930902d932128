"""The server going away mid-stream: the page says so, and reconnects when it is back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.serve.ui.browser import UiServer, chromium

SLOW = json.dumps(
    {
        "replies": [{"text": "one two three four five six seven eight nine ten", "pace": 0.3}] * 4,
        "chunkSize": 4,
    }
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiServer]:
    running = UiServer(tmp_path_factory.mktemp("reconnect"), SLOW)
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def page(server: UiServer) -> Iterator[Any]:
    with chromium() as context:
        opened = context.new_page()
        yield opened
        opened.close()


def test_cancel_stops_the_answer(page: Any, server: UiServer) -> None:
    page.goto(f"{server.url}/ui#/chat/helper")
    page.wait_for_selector("body[data-ready=chat]")
    page.fill("#prompt", "stop soon")
    page.click("#send")
    page.wait_for_selector(".msg.streaming .text")
    page.click("#cancel")
    page.wait_for_selector(".msg.assistant .cancelled")
    assert "nine ten" not in page.locator("#transcript").inner_text()
    assert page.locator("#cancel").is_disabled()


def test_a_server_gone_mid_stream_is_reported_and_the_page_reconnects(
    page: Any, server: UiServer
) -> None:
    page.goto(f"{server.url}/ui#/chat/helper")
    page.wait_for_selector("body[data-ready=chat]")
    page.fill("#prompt", "hi")
    page.click("#send")
    page.wait_for_selector(".msg.streaming .text")  # the answer has started
    server.kill()
    page.wait_for_selector("#conn.down")
    assert "Connection lost" in page.locator("#conn").inner_text()
    assert "stopped answering" in page.locator("#notice").inner_text()
    server.start()  # the same port and session file
    page.wait_for_selector("#conn:not(.down)", timeout=30_000)
    assert page.locator("#conn").inner_text() == "Reconnected"
    assert "Reconnected" in page.locator("#notice").inner_text()
    # the interrupted turn was not stored: the page shows the session as saved, and goes on
    assert page.locator("#transcript .msg").count() == 0
    page.fill("#prompt", "again")
    page.click("#send")
    page.wait_for_selector("text=nine ten", timeout=30_000)
    assert page.locator("#transcript .msg").count() == 2
