"""What the browser tests share: one chromium per module and a page that fails its test
on any uncaught script error (a module with other needs defines its own `page`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.serve.ui import browser as browser_module
from tests.serve.ui.browser import chromium


@pytest.fixture(scope="session", autouse=True)
def screenshots_in_pytests_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The page tests' screenshots go to a folder of pytest's own temporary tree, which
    pytest prunes (it keeps the last three runs), not a new folder of /tmp per run."""
    if browser_module._scratch is None:
        browser_module._scratch = tmp_path_factory.mktemp("ui-screenshots")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as context:
        yield context


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    opened = browser.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    opened.close()
    assert errors == []
