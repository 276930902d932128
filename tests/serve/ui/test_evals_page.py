"""The Evals page in Debian's chromium: runs listed, one opened case by case with its
transcript, tool calls and reasons, two compared; injected HTML in a report shows as text."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from raf import Agent, tool
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.evals import Case, Contains, Dataset, ExpectedCall, ToolCalls
from raf.evals.store import EvalRunStore
from raf.testing import FunctionChatClient, call, reply
from tests.serve.ui.browser import UiServer, screenshot

INJECTED = '<img src=x onerror="document.body.dataset.pwned=1"><script>alert(1)</script>'


@tool
def lookup(city: str) -> str:
    """The weather of a city."""
    return f"sunny in {city}"


def model(answer_for: dict[str, str]) -> Any:
    def answer(messages: Sequence[ChatMessage], options: ChatOptions) -> Any:
        last = messages[-1]
        if last.role is Role.TOOL:
            city = str(last.function_results[0].result).split()[-1]
            return answer_for.get(city, f"It is {last.function_results[0].result}.")
        return reply("", call("lookup", city=last.text.split()[-1].strip("?")))

    return answer


def dataset() -> Dataset:
    return Dataset(
        name="weather",
        cases=[
            Case(
                name=city,
                input=f"Weather in {city}?",
                expected_output="sunny",
                expected_tool_calls=[ExpectedCall(name="lookup", arguments={"city": city})],
            )
            for city in ("Oslo", "Lima")
        ],
        evaluators=[Contains(), ToolCalls()],
    )


def record_runs(folder: Path) -> tuple[str, str]:
    """Two runs: all pass, then Lima answers with injected HTML and regresses."""
    store = EvalRunStore(folder)

    async def run(answers: dict[str, str], name: str) -> str:
        agent = Agent(chat_client=FunctionChatClient(model(answers)), tools=[lookup], name=name)
        report = await dataset().evaluate(agent, progress=False)
        return store.save(report)

    async def both() -> tuple[str, str]:
        return await run({}, "before"), await run({"Lima": f"Rainy {INJECTED}"}, "after")

    # in a thread of its own: Playwright's sync API may already run a loop in this one
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, both()).result(timeout=60)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[UiServer, str, str]]:
    home = tmp_path_factory.mktemp("evals-ui")
    first, second = record_runs(home / "data" / "evals")
    replies = json.dumps(["unused"])
    running = UiServer(home, replies)
    running.start()
    try:
        yield running, first, second
    finally:
        running.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    opened = browser.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    dialogs: list[str] = []

    def dismiss(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    opened.on("dialog", dismiss)
    yield opened
    opened.close()
    assert errors == [] and dialogs == []


def test_runs_are_listed_newest_first(page: Any, server: tuple[UiServer, str, str]) -> None:
    ui, first, second = server
    page.goto(f"{ui.url}/ui#/evals")
    page.wait_for_selector("body[data-ready=evals]")
    ids = page.eval_on_selector_all(
        "#eval-runs tr[data-run]", "rows => rows.map(r => r.dataset.run)"
    )
    assert ids == [second, first]
    row = page.locator(f"tr[data-run='{first}']")
    assert "2/2" in row.inner_text() and "100%" in row.inner_text()
    screenshot(page, "evals-runs")


def test_a_run_opens_case_by_case_with_injected_html_as_text(
    page: Any, server: tuple[UiServer, str, str]
) -> None:
    ui, _, second = server
    page.goto(f"{ui.url}/ui#/evals")
    page.wait_for_selector("body[data-ready=evals]")
    page.click(f"tr[data-run='{second}'] a.open")
    page.wait_for_selector("body[data-ready=evals-run]")
    assert "1/2 passed (50%), 1 failed, 0 errored" in page.inner_text("#eval-totals")
    cases = page.eval_on_selector_all(".eval-case", "els => els.map(e => e.dataset.case)")
    assert cases == ["Lima", "Oslo"]  # failures first
    lima = page.locator(".eval-case[data-case='Lima']")
    lima.locator("summary").first.click()
    answer = lima.locator("pre.answer")
    assert answer.inner_text() == f"Rainy {INJECTED}"
    assert page.locator(".eval-case img, .eval-case script").count() == 0
    assert page.evaluate("document.body.dataset.pwned") is None
    reason = lima.locator("tr[data-evaluator='contains'] td.reason").inner_text()
    assert reason.startswith("missing 'sunny' in 'Rainy <img")
    assert lima.locator("tr[data-evaluator='tool_calls'] td.reason").inner_text() == (
        "made lookup(city=Lima)"
    )
    tool = lima.locator("details.card.tool[data-call]")
    assert tool.count() == 1 and "lookup" in tool.inner_text()
    assert lima.locator(".msg.assistant").count() >= 2
    screenshot(page, "evals-run")


def test_two_runs_compared_regressions_first(page: Any, server: tuple[UiServer, str, str]) -> None:
    ui, first, second = server
    page.goto(f"{ui.url}/ui#/evals")
    page.wait_for_selector("body[data-ready=evals]")
    assert page.input_value("#compare-before") == first
    assert page.input_value("#compare-after") == second
    page.click("#compare")
    page.wait_for_selector("body[data-ready=evals-compare]")
    rows = page.locator("#eval-changes tr[data-case]")
    assert rows.count() == 1
    assert rows.first.get_attribute("data-kind") == "regressed"
    assert rows.first.get_attribute("data-case") == "Lima"
    assert "contains: missing 'sunny'" in rows.first.inner_text()
    assert "100% → 50%; 1 regressed, 0 improved" in page.inner_text("#compare-totals")
    screenshot(page, "evals-compare")


def test_the_api_refuses_paths_outside_the_runs_folder(server: tuple[UiServer, str, str]) -> None:
    ui, _, _ = server
    for bad in ("..%2F..%2Fetc%2Fpasswd", "nope", "%2Etmp"):
        answer = httpx.get(f"{ui.url}/ui/api/evals/runs/{bad}", timeout=10)
        assert answer.status_code == 404, bad
