"""A test run leaves the README's screenshots alone: the page tests write theirs to a
temporary folder unless RAF_UPDATE_SCREENSHOTS=1 asks to refresh docs/ui/."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.serve.ui import browser


def test_screenshots_go_to_a_temporary_folder_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAF_UPDATE_SCREENSHOTS", raising=False)
    folder = browser.screenshot_dir()
    assert folder != browser.SCREENSHOTS
    assert folder.is_relative_to(Path(tempfile.gettempdir()))
    assert browser.screenshot_dir() == folder  # one folder for the whole run


@pytest.mark.parametrize("value", ["0", "", "yes"])
def test_only_the_explicit_value_refreshes_the_docs(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("RAF_UPDATE_SCREENSHOTS", value)
    assert browser.screenshot_dir() != browser.SCREENSHOTS
    monkeypatch.setenv("RAF_UPDATE_SCREENSHOTS", "1")
    assert browser.screenshot_dir() == browser.SCREENSHOTS
    assert browser.SCREENSHOTS.parts[-2:] == ("docs", "ui")


class FakePage:
    """Records where a screenshot was asked to go, writing a stand-in image there."""

    def screenshot(self, *, path: str) -> None:
        Path(path).write_bytes(b"\x89PNG")


def test_a_screenshot_does_not_touch_the_tracked_images(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAF_UPDATE_SCREENSHOTS", raising=False)
    tracked = browser.SCREENSHOTS / "chat.png"
    before = tracked.read_bytes()
    path = browser.screenshot(FakePage(), "chat")
    assert path.read_bytes() == b"\x89PNG" and path.parent != browser.SCREENSHOTS
    assert tracked.read_bytes() == before
