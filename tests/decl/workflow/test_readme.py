"""The declarative workflow guide's examples run as written and print what their
comments say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "guide" / "declarative-workflows.md"


def section() -> str:
    return PAGE.read_text(encoding="utf-8")


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", section(), re.S)


def test_the_section_has_examples() -> None:
    assert len(blocks()) == 5


@pytest.mark.parametrize("index", range(5))
def test_an_example_runs_and_prints_what_it_says(index: int, tmp_path: Path) -> None:
    code = blocks()[index]
    expected = re.findall(r"print\(.*\)\s+# (.*)", code)
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected


def test_the_shell_example_validates() -> None:
    (command,) = re.findall(r"```sh\n(.*?)\n```", section(), re.S)
    args = command.split()
    assert args[:2] == ["raf", "validate"]
    done = subprocess.run(
        [sys.executable, "-m", "raf.cli", *args[1:]],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
