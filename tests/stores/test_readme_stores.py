"""The docs' example of shared session stores runs as written against this test
session's PostgreSQL and Redis, and prints what its comments say."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.servers import Server

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "agents.md"


def blocks() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("### Sessions shared by several workers")
    end = text.find("\n## ", start)
    end = len(text) if end < 0 else end
    return re.findall(r"```python\n(.*?)```", text[start:end], re.S)


def test_the_shared_store_example_runs_and_prints_what_it_says(
    tmp_path: Path, postgres_server: Server, redis_server: Server
) -> None:
    [code] = blocks()
    expected = re.findall(r"print\(.*\)\s+# (.*)", code)
    assert expected
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = {**os.environ, "DATABASE_URL": postgres_server.url, "REDIS_URL": redis_server.url}
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected
