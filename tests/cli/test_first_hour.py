"""What a newcomer trips over in the first hour gets a message that says what happened."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .helpers import raf, script, write_agent

SIMPLE = "name: helper\ninstructions: You help.\n"


def test_an_unknown_session_id_says_so(tmp_path: Path) -> None:
    write_agent(tmp_path, SIMPLE)
    done = raf(
        tmp_path,
        "run",
        "agent.yaml",
        "hi",
        "--session",
        "nope",
        "--model",
        script(tmp_path, ["hi!"]),
    )
    assert done.returncode == 0, done.stderr
    assert "no stored session 'nope'; starting a new one" in done.stderr
    again = raf(
        tmp_path, "run", "agent.yaml", "hi", "--session", "nope", "--model", script(tmp_path, ["x"])
    )
    assert "no stored session" not in again.stderr  # stored by the first run


@pytest.mark.parametrize(
    ("replies", "says"),
    [
        ({"answers": ["x"]}, "unknown keys: answers"),
        ([42], "reply 1 is int"),
        (["ok", {"txt": "x"}], "reply 2: unknown keys txt"),
        ([{"calls": [{"arguments": {}}]}], "reply 1: call 1 must be"),
        ([{"text": "x", "delay": "soon"}], "'delay' is a number of seconds"),
    ],
)
def test_a_scripted_model_file_in_the_wrong_format_says_so(
    tmp_path: Path, replies: object, says: str
) -> None:
    write_agent(tmp_path, SIMPLE)
    path = tmp_path / "script.json"
    path.write_text(json.dumps(replies), encoding="utf-8")
    done = raf(tmp_path, "run", "agent.yaml", "hi", "--model", f"scripted:{path}")
    assert done.returncode == 1
    assert says in done.stderr and "Traceback" not in done.stderr
