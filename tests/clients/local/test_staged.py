"""The embedded model with tools, for real: the README's keyless example lists and reads a
folder with the workspace file tools and answers from what they return."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[3] / "README.md"


def keyless_example() -> str:
    """The README's Python block that runs the file tools on the embedded model."""
    for code in re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S):
        if "LocalChatClient(" in code and "file_tools()" in code:
            return str(code)
    raise AssertionError("README.md has no Python block with LocalChatClient and file_tools")


@pytest.mark.slow
def test_the_readme_keyless_example_lists_and_reads_the_notes(tmp_path: Path) -> None:
    script = tmp_path / "keyless.py"
    # each print of the example is kept apart: answers may hold blank lines
    capture = (
        "import builtins, json\n_said = []\n_print = builtins.print\n"
        "builtins.print = lambda *a, **k: _said.append(' '.join(map(str, a)))\n"
    )
    script.write_text(
        capture + keyless_example() + "\n_print(json.dumps(_said))\n", encoding="utf-8"
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    listing, reading = json.loads(done.stdout.strip().splitlines()[-1])
    # The workspace's path is in the prompt, so the wording changes from one temporary
    # folder to the next; over 8 folders each answer named these every time.
    assert re.search(r"todo\.txt", listing, re.I), listing  # it listed the folder
    # it read the file and said what it holds ("Buy oat milk and call Ada.")
    assert re.search(r"\bAda\b|oat milk", reading, re.I), reading
