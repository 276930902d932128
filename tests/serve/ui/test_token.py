"""A server with bearer tokens: the page asks for one, sends it, and asks again if refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from raf import AgentBuilder
from raf.serve import AgentHost, ServeLimits, ServeSecurity, create_app, serve_in_thread
from raf.serve.ui import ServeUI
from raf.testing import ScriptedChatClient
from tests.serve.ui.browser import chromium

TOKEN = "ui-browser-token-0123456789"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    model = ScriptedChatClient(["Signed in and answering."])
    agent = AgentBuilder().with_name("guarded").with_chat_client(model).build()
    host = AgentHost([agent])
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN])
    with serve_in_thread(create_app(host, security, ui=ServeUI.attach(host))) as served:
        yield served


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    with chromium() as context:
        opened = context.new_page()
        yield opened
        opened.close()


def test_the_page_asks_for_a_token_and_sends_it(page: Any, url: str) -> None:
    page.goto(f"{url}/ui#/chat/guarded")
    page.wait_for_selector("#token-form")
    assert "Give one of the server's bearer tokens." in page.locator("main").inner_text()
    page.fill("#token", "wrong-token-0123456789")
    page.click("#token-form button")
    page.wait_for_selector("text=That token was refused")
    page.fill("#token", TOKEN)
    page.click("#token-form button")
    page.wait_for_selector("body[data-ready=chat]")
    page.fill("#prompt", "hello")
    page.click("#send")
    page.wait_for_selector("text=Signed in and answering.")
    # the token stays in this tab: a reload needs no new sign-in
    page.reload()
    page.wait_for_selector("body[data-ready=chat]")
    assert page.locator("#token-form").count() == 0


def test_an_address_barred_for_wrong_tokens_is_told_why_and_asked_again(page: Any) -> None:
    """Past the wrong tokens an address may send, the page shows the server's reason
    (how long to wait) and asks for the token again, instead of reconnecting forever."""
    agent = AgentBuilder().with_name("guarded").with_chat_client(ScriptedChatClient([])).build()
    host = AgentHost([agent])
    limits = ServeLimits(auth_failures=1, auth_failure_window=600)
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN], limits=limits)
    with serve_in_thread(create_app(host, security, ui=ServeUI.attach(host))) as served:
        page.goto(f"{served}/ui#/chat/guarded")
        page.wait_for_selector("#token-form")
        page.fill("#token", "wrong-token-0123456789")
        page.click("#token-form button")
        page.wait_for_selector("text=That token was refused")
        page.fill("#token", TOKEN)
        page.click("#token-form button")
        page.wait_for_selector("text=too many failed authentications from this address")
        assert page.locator("#token-form").count() == 1
