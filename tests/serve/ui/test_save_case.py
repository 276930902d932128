"""A chat turn saved as an eval case from the page, in Debian's chromium: the button on a
real run with the scripted model, the case then on the Evals page (injected HTML shown as
text), a taken name refused, and `raf eval` running the written dataset."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from raf.evals import Dataset
from tests.cli.helpers import raf, script
from tests.serve.ui.browser import UiServer

INJECTED = '<img src=x onerror="window.__pwned = 1"><script>window.__pwned = 2</script>'
REPLIES = json.dumps(["Paris.", "Lima."])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiServer]:
    running = UiServer(tmp_path_factory.mktemp("save-case"), REPLIES)
    running.start()
    try:
        yield running
    finally:
        running.stop()


def datasets(server: UiServer) -> Path:
    return server.home / "data" / "evals" / "datasets"


def ask(page: Any, text: str, answer: str) -> None:
    page.fill("#prompt", text)
    page.click("#send")
    page.wait_for_selector(f".msg.assistant >> text={answer}")
    page.wait_for_selector(".msg.streaming", state="detached")


def test_a_turn_of_a_chat_is_saved_and_shows_on_the_evals_page(
    page: Any, server: UiServer, tmp_path: Path
) -> None:
    page.goto(f"{server.url}/ui#/chat/helper")
    page.wait_for_selector("body[data-ready=chat]")
    ask(page, "What is the capital of France?", "Paris.")
    ask(page, "And of Peru?", "Lima.")
    page.click("#save-case")
    page.wait_for_selector("#case-form")
    options = page.eval_on_selector_all("#case-turn option", "os => os.map(o => o.textContent)")
    assert options == ["1. What is the capital of France? → Paris.", "2. And of Peru? → Lima."]
    assert page.input_value("#case-turn") == "1"  # the last turn unless another is picked
    assert page.input_value("#case-name") == "And of Peru?"
    page.select_option("#case-turn", "0")
    assert page.input_value("#case-name") == "What is the capital of France?"
    assert page.input_value("#case-dataset") == ""  # no dataset yet: a new one
    assert page.input_value("#case-new-dataset") == "helper"
    page.fill("#case-name", f"capital {INJECTED}")
    page.fill("#case-new-dataset", "capitals")
    page.click("#case-save")
    page.wait_for_selector("#case-result.ok")
    assert "in dataset capitals (1 case," in page.inner_text("#case-result")

    page.click("#case-open")
    page.wait_for_selector("body[data-ready=evals-dataset]")
    case = page.locator(".dataset-case")
    assert case.count() == 1
    assert case.locator(".case-name").inner_text() == f"capital {INJECTED}"
    assert case.locator("pre.input").inner_text() == "What is the capital of France?"
    assert case.locator("pre.expected").inner_text() == "Paris."
    assert page.locator("#main img, #main script").count() == 0
    assert page.evaluate("window.__pwned") is None

    page.goto(f"{server.url}/ui#/evals")
    page.wait_for_selector("body[data-ready=evals]")
    row = page.locator("#eval-datasets tr[data-dataset=capitals]")
    assert "capitals" in row.inner_text() and "\t1\t" in row.inner_text()

    # the written file is a dataset `raf eval` runs
    written = datasets(server) / "capitals.yaml"
    model = script(tmp_path, ["Paris."])
    ran = raf(tmp_path, "eval", str(written), str(server.home / "helper.yaml"), "--model", model)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1/1 runs passed (100%)" in ran.stdout
    wrong = script(tmp_path, ["Lyon."], name="wrong.json")
    ran = raf(tmp_path, "eval", str(written), str(server.home / "helper.yaml"), "--model", wrong)
    assert "0/1 runs passed" in ran.stdout and "missing 'paris.'" in ran.stdout.lower()


def test_a_tool_call_is_saved_from_the_sessions_page_into_a_dataset_there(
    page: Any, server: UiServer
) -> None:
    page.goto(f"{server.url}/ui#/chat/clerk")
    page.wait_for_selector("body[data-ready=chat]")
    ask(page, "define cat", "Done: cat: a word")
    sid = page.evaluate("location.hash.split('/')[3]")
    page.goto(f"{server.url}/ui#/sessions/clerk")
    page.wait_for_selector("body[data-ready=sessions]")
    page.click(f"tr[data-session='{sid}'] button.save-case")
    page.wait_for_selector("#case-form")
    assert page.input_value("#case-name") == "define cat"
    assert page.input_value("#case-dataset") == "capitals"  # the dataset there is offered
    assert page.locator("#case-new-dataset").is_hidden()
    assert "[lookup]" in page.inner_text("#case-turn")
    page.click("#case-save")
    page.wait_for_selector("#case-result.ok")
    assert "in dataset capitals (2 cases," in page.inner_text("#case-result")

    page.click("#case-save")  # the same name again
    page.wait_for_selector("#case-result.bad")
    assert page.inner_text("#case-result").startswith(
        "Not saved: dataset 'capitals' already has a case named 'define cat'"
    )

    page.goto(f"{server.url}/ui#/evals")
    page.wait_for_selector("body[data-ready=evals]")
    assert "\t2\t" in page.inner_text("#eval-datasets tr[data-dataset=capitals]")
    page.click("#eval-datasets tr[data-dataset=capitals] a.open")
    page.wait_for_selector("body[data-ready=evals-dataset]")
    case = page.locator(".dataset-case[data-case='define cat']")
    assert case.locator(".expected-calls li").inner_text() == 'lookup {"word":"cat"}'
    expected = case.locator("pre.expected").inner_text()
    assert expected.startswith("Done: cat: a word <script>window.__pwned = 1</script>")
    assert page.locator("#main img, #main script").count() == 0
    assert page.evaluate("window.__pwned") is None
    cases = Dataset.from_file(datasets(server) / "capitals.yaml").cases
    assert [c.name for c in cases] == [f"capital {INJECTED}", "define cat"]
    assert [c.to_dict() for c in cases[1].expected_tool_calls] == [
        {"name": "lookup", "arguments": {"word": "cat"}}
    ]
