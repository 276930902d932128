"""A real headless browser (Debian's chromium through Playwright) and `raf ui` as a program."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
APP = Path(__file__).resolve().parent / "served_app.py"
SCREENSHOTS = ROOT / "docs" / "ui"
"""Where the docs' screenshots live: written only when RAF_UPDATE_SCREENSHOTS=1."""
_scratch: Path | None = None


def screenshot_dir() -> Path:
    """docs/ui/ when RAF_UPDATE_SCREENSHOTS=1 asks to refresh the docs' images; else a
    folder of this test process under the system's temp dir, so a test run leaves the
    tracked images as they are."""
    global _scratch
    if os.environ.get("RAF_UPDATE_SCREENSHOTS") == "1":
        return SCREENSHOTS
    if _scratch is None:
        _scratch = Path(tempfile.mkdtemp(prefix="raf-ui-screenshots-"))
    return _scratch


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
STARTUP_TIMEOUT = 60.0
HELPER = """
name: helper
description: Answers briefly.
instructions: You answer briefly.
"""
SURVEY = """
kind: workflow
name: survey
description: Asks a name, then greets.
trigger:
  kind: OnConversationStart
  id: start
  actions:
    - {kind: Question, id: ask, variable: Local.name, question: {text: Your name?}}
    - {kind: SendActivity, id: say, activity: "Hi {Local.name}."}
"""


@contextmanager
def chromium() -> Iterator[Any]:
    """A browser context with a fresh profile, closed on leaving."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="raf-ui-profile-") as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1280, "height": 860},
            accept_downloads=True,
            timeout=STARTUP_TIMEOUT * 1000,
        )
        context.set_default_timeout(15_000)
        try:
            yield context
        finally:
            context.close()


class UiServer:
    """`raf ui` in a subprocess, over a helper document (scripted model) and the test app."""

    def __init__(self, home: Path, replies: str, port: int = 0) -> None:
        self.home = home
        self.port = port
        self.replies = replies
        self.process: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self) -> str:
        (self.home / "helper.yaml").write_text(HELPER, encoding="utf-8")
        (self.home / "survey.yaml").write_text(SURVEY, encoding="utf-8")
        (self.home / "script.json").write_text(self.replies, encoding="utf-8")
        env = dict(os.environ)
        env.update(
            RAF_UI_TEST_HOME=str(self.home),
            RAF_DATA_DIR=str(self.home / "data"),
            PYTHONUNBUFFERED="1",
        )
        env.pop("RAF_MODEL", None)
        command = [
            sys.executable,
            "-m",
            "raf.cli",
            "ui",
            str(self.home / "helper.yaml"),
            str(self.home / "survey.yaml"),
            str(APP),
            "--port",
            str(self.port),
            "--sessions",
            str(self.home / "sessions.sqlite"),
            "--model",
            f"scripted:{self.home / 'script.json'}",
        ]
        self.process = subprocess.Popen(
            command, cwd=self.home, env=env, stderr=subprocess.PIPE, text=True
        )
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        found = re.search(r"on (http://\S+) \(auth:", line)
        if not found:
            self.stop()
            raise RuntimeError(f"raf ui did not start: {line}")
        self.url = found.group(1)
        self.port = int(self.url.rsplit(":", 1)[1])
        return self.url

    def stop(self) -> None:
        """Ctrl-C, then a kill if it does not stop within the timeout."""
        process = self.process
        if process is None:
            return
        self.process = None
        stop_process(process)

    def kill(self) -> None:
        """Stop at once, as a crash would."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=15)
            if self.process.stderr is not None:
                self.process.stderr.close()
            self.process = None


def screenshot(page: Any, name: str) -> Path:
    """Save a screenshot of the page (into docs/ui/, shown in the web UI guide, only when
    RAF_UPDATE_SCREENSHOTS=1)."""
    folder = screenshot_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def stop_process(process: subprocess.Popen[str]) -> None:
    """Ctrl-C a `raf` program, then a kill if it does not stop within 15 s; its stderr
    pipe closed."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
    if process.stderr is not None:
        process.stderr.close()
