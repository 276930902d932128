"""An agent document's `schedule:` entries: a cron that does not parse is a located
error; a good one is kept with its input and session."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf.core.errors import ConfigurationError
from raf.decl.agent.builder import DeclAgentBuilder
from raf.decl.documents.schedule_decls import cron_problem


@pytest.mark.parametrize(
    "cron",
    ["*/5 * * * *", "* * * * * *", "0 9 * * mon-fri", "0 0 1 jan *", "0-30/10 1,2 * * 7"],
)
def test_cron_expressions_that_parse(cron: str) -> None:
    assert cron_problem(cron) is None


@pytest.mark.parametrize(
    ("cron", "why"),
    [
        ("61 * * * *", "61 is outside 0-59"),
        ("* * *", "3 fields"),
        ("*/0 * * * *", "steps by 0"),
        ("x * * * *", "'x' is not a number"),
        ("0 0 32 * *", "32 is outside 1-31"),
        ("0 0 * * * * *", "7 fields"),
    ],
)
def test_cron_expressions_that_do_not(cron: str, why: str) -> None:
    problem = cron_problem(cron)
    assert problem is not None and why in problem


def test_a_schedule_is_read_from_the_document(tmp_path: Path) -> None:
    path = tmp_path / "ticker.yaml"
    path.write_text(
        "name: ticker\ninstructions: hi\nschedule:\n"
        '  - {cron: "*/5 * * * *", input: report, session: daily, name: five}\n'
        '  - cron: "0 9 * * mon"\n    input: week\n'
    )
    decl = DeclAgentBuilder().from_file(path).declaration
    assert [(s.cron, s.input, s.session, s.name) for s in decl.schedule] == [
        ("*/5 * * * *", "report", "daily", "five"),
        ("0 9 * * mon", "week", None, None),
    ]


def test_a_cron_that_does_not_parse_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "ticker.yaml"
    path.write_text(
        'name: ticker\ninstructions: hi\nschedule:\n  - cron: "*/5 * * * *"\n    input: a\n'
        '  - cron: "61 * * * *"\n    input: b\n'
    )
    with pytest.raises(ConfigurationError) as caught:
        DeclAgentBuilder().from_file(path)
    text = str(caught.value)
    assert "ticker.yaml:6" in text and "schedule[1].cron" in text
    assert "61 is outside 0-59" in text
