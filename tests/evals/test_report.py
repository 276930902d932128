"""Reports as JSON, text and HTML, and `compare` finding regressions first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from raf.core.errors import ConfigurationError
from raf.evals import Case, Dataset, Equals, EvalReport, compare, pass_at_k, report_html


def dataset() -> Dataset:
    return Dataset(
        name="qa",
        cases=[Case(name=q, input=q, expected_output=q.upper()) for q in ("a", "b", "c", "d")],
        evaluators=[Equals()],
    )


async def run(answers: dict[str, str]) -> EvalReport:
    return await dataset().evaluate(lambda q: answers.get(q, q.upper()), progress=False)


async def test_json_round_trip_keeps_everything(tmp_path: Path) -> None:
    report = await run({"b": "nope"})
    again = EvalReport.read_json(report.write_json(tmp_path / "r.json"))
    assert again.to_dict() == report.to_dict()
    assert again.summary()["passed"] == 3
    assert again.results[1].evaluations[0].reason == "expected 'B', got 'nope'"


def test_a_file_that_is_not_a_report_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('{"format": "x"}')
    with pytest.raises(ConfigurationError, match="not an eval report"):
        EvalReport.read_json(path)
    path.write_text('{\n "a": }')
    with pytest.raises(ConfigurationError, match=rf"{re.escape(str(path))}:2"):
        EvalReport.read_json(path)


async def test_the_table_lists_cases_and_why_they_failed() -> None:
    table = (await run({"c": "zzz"})).table()
    row = next(line for line in table.splitlines() if line.startswith("c "))
    assert "failed" in row and "equals: expected 'C', got 'zzz'" in row
    assert table.splitlines()[-1].startswith("3/4 runs passed (75%), 1 failed, 0 errored")


async def test_compare_puts_regressions_first() -> None:
    before = await run({"a": "wrong"})
    after = await run({"c": "wrong"})
    comparison = compare(before, after)
    assert [(c.case, c.kind) for c in comparison.changes][:2] == [
        ("c", "regressed"),
        ("a", "improved"),
    ]
    assert comparison.has_regressions and len(comparison.regressions) == 1
    assert "expected 'C', got 'wrong'" in comparison.regressions[0].reason
    assert comparison.table().splitlines()[0].startswith("regressed  c  100% -> 0%")
    assert not compare(before, before).has_regressions


async def test_compare_sees_new_and_removed_cases() -> None:
    before = await run({})
    smaller = Dataset(cases=[*dataset().cases[:2], Case(name="e", input="e")], name="qa")
    after = await smaller.evaluate(lambda q: q.upper(), progress=False)
    kinds = {c.case: c.kind for c in compare(before, after).changes}
    assert kinds == {"a": "same", "b": "same", "c": "removed", "d": "removed", "e": "new"}


async def test_html_is_self_contained_and_shows_injected_html_as_text() -> None:
    attack = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    report = await dataset().evaluate(lambda q: attack if q == "a" else q.upper(), progress=False)
    report.results[0].case = "<b>bold</b>"
    page = report_html(report, comparison=compare(report, report))
    assert "<script" not in page and "<img" not in page and "<b>bold" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert page.index('data-status="failed"') < page.index('data-status="passed"')


def test_pass_at_k_matches_the_unbiased_estimator() -> None:
    assert pass_at_k(5, 0, 1) == 0.0
    assert pass_at_k(5, 5, 3) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)
