"""Files in the chat page: a person attaches an image or a PDF, the model receives it with
the message, images are drawn in the transcript (live and when the conversation is opened
again) and in the card of a tool that returned one; a file of a type no model takes, or
too large for the server, is refused in the page before anything is sent. Driven in
Debian's chromium by Playwright against `raf ui` as a program."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.serve.ui.browser import UiServer

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PDF = b"%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"
REPLIES = json.dumps({"replies": [{"text": "Hello.", "pace": 0.01}] * 5})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiServer]:
    running = UiServer(tmp_path_factory.mktemp("attach"), REPLIES)
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    opened = browser.new_page()
    errors: list[str] = []
    posts: list[dict[str, Any]] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on("console", lambda m: errors.append(m.text) if "Content Security" in m.text else None)
    opened.on(
        "request",
        lambda r: (
            posts.append(json.loads(r.post_data or "{}"))
            if r.method == "POST" and r.url.endswith("/runs")
            else None
        ),
    )
    opened.posts = posts
    yield opened
    opened.close()
    assert errors == []


def open_chat(page: Any, server: UiServer, session: str = "") -> None:
    page.goto(f"{server.url}/ui#/chat/clerk" + (f"/{session}" if session else ""))
    page.wait_for_selector("body[data-ready=chat]")


def send(page: Any, text: str) -> None:
    before = page.locator(".msg.user").count()
    page.fill("#prompt", text)
    page.click("#send")
    page.wait_for_function(
        "before => document.querySelectorAll('.msg.user').length > before"
        " && !document.querySelector('#send').disabled",
        arg=before,
    )


def attach(page: Any, name: str, mime: str, data: bytes) -> None:
    page.set_input_files("#attach-input", files=[{"name": name, "mimeType": mime, "buffer": data}])


def drawn(page: Any, selector: str) -> list[dict[str, Any]]:
    """The images under `selector`: their source and whether the browser decoded them."""
    page.wait_for_function(
        "sel => [...document.querySelectorAll(sel)].every(i => i.complete)", arg=selector
    )
    images: list[dict[str, Any]] = page.locator(selector).evaluate_all(
        "imgs => imgs.map(i => ({src: i.getAttribute('src'), width: i.naturalWidth, alt: i.alt}))"
    )
    return images


def test_an_attached_image_reaches_the_model_and_is_shown(page: Any, server: UiServer) -> None:
    open_chat(page, server)
    attach(page, "dot.png", "image/png", PNG)
    assert page.locator("#attachments .chip").inner_text().startswith("dot.png (")
    send(page, "describe this")
    page.wait_for_selector("text=Received image/png (70 bytes) with: describe this")
    (body,) = page.posts
    assert body["messages"] == "describe this"
    assert body["attachments"] == [
        {"media_type": "image/png", "data": base64.b64encode(PNG).decode()}
    ]
    (image,) = drawn(page, ".msg.user img")
    assert image["src"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert image["width"] == 1  # decoded: the page's CSP let the data: URL through
    assert image["alt"] == "dot.png"
    assert page.locator("#attachments .chip").count() == 0  # sent: the list is empty again
    # the conversation opened again draws the stored image from the session
    page.reload()
    page.wait_for_selector("body[data-ready=chat] .msg.user img")
    (again,) = drawn(page, ".msg.user img")
    assert again["src"] == image["src"] and again["width"] == 1
    assert page.locator(".msg.user figcaption").inner_text() == "image/png, 70 B"


def test_a_pdf_goes_as_a_named_chip(page: Any, server: UiServer) -> None:
    open_chat(page, server)
    attach(page, "report.pdf", "application/pdf", PDF)
    send(page, "summarize")
    page.wait_for_selector(f"text=Received application/pdf ({len(PDF)} bytes) with: summarize")
    chip = page.locator(".msg.user .attachment.chip")
    assert chip.inner_text() == "document: report.pdf"
    assert page.locator(".msg.user img").count() == 0


def test_a_tool_result_image_is_drawn_in_its_card(page: Any, server: UiServer) -> None:
    open_chat(page, server)
    send(page, "snapshot")
    page.wait_for_selector("text=Done: the tool showed me image/png")
    page.click(".card.tool summary")
    (image,) = drawn(page, ".card.tool .media img")
    assert image["src"].startswith("data:image/png;base64,") and image["width"] == 1


def test_files_of_other_types_or_too_large_are_refused_in_the_page(
    page: Any, server: UiServer
) -> None:
    open_chat(page, server)
    attach(page, "page.html", "text/html", b"<b>hi</b>")
    notice = page.locator("#notice")
    assert "page.html: text/html cannot be sent to a model" in notice.inner_text()
    big = b"\x89PNG" + bytes(2 * 1024 * 1024)
    attach(page, "huge.png", "image/png", big)
    assert "huge.png is 2.0 MB; the largest image this server takes is" in notice.inner_text()
    assert page.locator("#attachments .chip").count() == 0
    page.click("#send")  # nothing typed, nothing attached: nothing happens
    attach(page, "dot.png", "image/png", PNG)
    page.click("#send")
    assert "Write a message to go with the attached file." in notice.inner_text()
    assert page.posts == []
    page.click("#attachments .remove")
    assert page.locator("#attachments .chip").count() == 0
