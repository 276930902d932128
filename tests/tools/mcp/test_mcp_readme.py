"""The MCP guide's examples run as written and print what their comments say.

A block whose first line names a file (`# booking_server.py: ...`) is saved under that
name beside the others, as a reader would; the npm servers are on PATH as after
`npm install -g`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..peers import BIN, ROOT

PAGE = ROOT / "docs" / "guide" / "mcp.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def _file_name(code: str) -> str | None:
    match = re.match(r"# (\w+\.py): ", code)
    return match.group(1) if match else None


def programs() -> list[str]:
    return [code for code in blocks() if _file_name(code) is None]


def test_the_section_has_examples() -> None:
    assert len(programs()) == 3 and len(blocks()) == 4


@pytest.mark.parametrize("index", range(3))
def test_an_mcp_example_runs_and_prints_what_it_says(index: int, tmp_path: Path) -> None:
    for code in blocks():
        name = _file_name(code)
        if name is not None:
            (tmp_path / name).write_text(code, encoding="utf-8")
    code = programs()[index]
    expected = re.findall(r"print\(.*\)\s+# (.*)", code)
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
        "PYTHONPATH": str(ROOT / "src"),
    }
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == expected
