"""The Get started page's last step, as a new user follows it: its agent document, its
shell commands and `raf ui` as a program, in a fresh folder with a fresh HOME, then the
page's message in Debian's chromium: the approval box says what the page says it says,
approving it gives the scripted answer, and the page asks for nothing the server lacks.
The page's text is read here, so a page and a program that drift apart fail this test."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serve.ui.browser import stop_process

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "get-started.md"


def section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def block(text: str, lang: str) -> str:
    found = re.search(rf"```{lang}\n(.*?)```", text, re.S)
    assert found is not None, f"no ```{lang} block"
    return found.group(1)


@pytest.fixture
def ui(tmp_path: Path) -> Iterator[str]:
    """The page's commands, run where a user would: the notes folder is the current one."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "agent.yaml").write_text(block(section("A first YAML document"), "yaml"))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("RAF_MODEL", None)
    env.update(
        HOME=str(tmp_path / "home"),
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]),
    )
    commands = block(section("Watch it in the UI"), "bash").strip().splitlines()
    assert commands[-1].startswith("raf ui "), commands
    for line in commands[:-1]:  # the files the page writes
        subprocess.run(["bash", "-c", line], cwd=folder, env=env, check=True, timeout=30)
    words = [sys.executable, "-m", "raf.cli", *shlex.split(commands[-1])[1:], "--port", "0"]
    process = subprocess.Popen(words, cwd=folder, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"on (http://\S+) \(auth:", line)
        if found is None:
            rest = process.stderr.read() if process.poll() is not None else ""
            pytest.fail(f"raf ui did not start: {line}{rest}")
        yield found.group(1)
    finally:
        stop_process(process)


def test_the_ui_step_asks_approval_as_the_page_says_and_answers(browser: Any, ui: str) -> None:
    text = section("Watch it in the UI")
    quoted = re.search(r'says why \("(.*?)"\)', text, re.S)
    assert quoted is not None
    why = " ".join(quoted.group(1).split())
    page = browser.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on(
        "response",
        lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None,
    )
    try:
        page.goto(f"{ui}/ui")
        page.wait_for_selector("body[data-ready=chat]")
        page.fill("#prompt", "What do my notes say?")
        page.click("#send")
        approval = page.locator(".approval").last
        approval.wait_for()
        assert approval.locator(".why").inner_text() == f"Why: {why}"
        approval.locator("button.approve").click()
        page.wait_for_selector("text=It says to remember the milk.")
        page.wait_for_selector(".msg.streaming", state="detached")
        assert page.locator(".card.tool").count() == 1
        assert page.locator("#side-panel").is_visible()  # the Events & trace panel
        assert page.locator("#events").inner_text().count("finished") == 2  # paused, answered
    finally:
        page.close()
    assert problems == []
