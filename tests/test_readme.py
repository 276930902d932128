"""Every Python block of README.md runs as written, in order, in one namespace (a reader
follows the README top to bottom): no top-level `await`, no undefined names.

A block that needs what a test run does not have (a key, a server, a download) is marked
with an HTML comment on the line before its fence, `<!-- readme-check: compile-only:
REASON -->`; it is still compiled and checked for undefined names, but not run.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(
    r"(?:<!-- readme-check: (?P<mark>[^>]*?) -->\n)?```python\n(?P<code>.*?)```", re.S
)
_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")


@dataclass(frozen=True)
class Block:
    """One ```python block: its code, the line it starts on, and its mark."""

    code: str
    line: int
    mark: str

    @property
    def runs(self) -> bool:
        return not self.mark.startswith("compile-only")


def blocks(text: str) -> list[Block]:
    out = []
    for match in _BLOCK.finditer(text):
        line = text.count("\n", 0, match.start("code")) + 1
        out.append(Block(code=match.group("code"), line=line, mark=match.group("mark") or ""))
    return out


def test_marks_say_why():
    for block in blocks(README.read_text(encoding="utf-8")):
        if block.mark:
            assert re.fullmatch(r"compile-only: \S.*", block.mark), (block.line, block.mark)


def test_no_top_level_await():
    for block in blocks(README.read_text(encoding="utf-8")):
        try:
            ast.parse(block.code)
        except SyntaxError as exc:
            pytest.fail(f"README.md:{block.line + (exc.lineno or 1) - 1}: {exc.msg}")


def test_no_undefined_names(tmp_path):
    # the blocks in order, each after the ones before it, as a reader runs them
    text = "\n\n".join(b.code for b in blocks(README.read_text(encoding="utf-8")))
    script = tmp_path / "readme_blocks.py"
    script.write_text(text, encoding="utf-8")
    found = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "F821,F822,F823",
         "--output-format", "concise", str(script)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert found.returncode == 0, found.stdout + found.stderr


def test_blocks_run(tmp_path, monkeypatch):
    for key in _KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.delenv("RAF_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__readme__"}
    for block in blocks(README.read_text(encoding="utf-8")):
        if not block.runs:
            continue
        try:
            exec(compile(block.code, f"README.md:{block.line}", "exec"), namespace)
        except Exception as exc:  # the block's own error, located
            pytest.fail(f"README.md block at line {block.line}: {type(exc).__name__}: {exc}")
    assert os.getcwd() == str(tmp_path)
