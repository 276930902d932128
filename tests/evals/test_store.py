"""The runs folder: reports saved under readable ids, listed newest first, ids checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf.core.errors import ConfigurationError
from raf.evals import Case, Dataset, Equals, EvalReport
from raf.evals.store import EvalRunStore, default_runs_dir


async def report(started_at: float) -> EvalReport:
    dataset = Dataset(
        name="tiny", cases=[Case(name="a", input="a", expected_output="a")], evaluators=[Equals()]
    )
    result = await dataset.evaluate(lambda q: q, progress=False, name="echo")
    result.started_at = started_at
    return result


async def test_saved_runs_are_listed_newest_first_and_load_back(tmp_path: Path) -> None:
    store = EvalRunStore(tmp_path)
    old = store.save(await report(1_700_000_000))
    new = store.save(await report(1_800_000_000))
    again = store.save(await report(1_800_000_000))
    assert old == "20231114-221320-tiny-echo" and again == f"{new}-2"
    (tmp_path / "notes.json").write_text("{}")  # not a report: skipped
    assert [r.id for r in store.list()] == [again, new, old]
    assert store.list()[0].summary["passed"] == 1
    assert store.load(old).results[0].case == "a"


def test_ids_cannot_leave_the_folder(tmp_path: Path) -> None:
    store = EvalRunStore(tmp_path)
    for bad in ("../x", "a/b", ".hidden", "", "x.json"):
        with pytest.raises(ConfigurationError):
            store.load(bad)
    with pytest.raises(ConfigurationError, match="no eval run 'missing'"):
        store.load("missing")


def test_the_default_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAF_EVALS_DIR", "/tmp/x-evals")
    assert default_runs_dir() == Path("/tmp/x-evals")
    monkeypatch.delenv("RAF_EVALS_DIR")
    monkeypatch.setenv("RAF_DATA_DIR", "/tmp/x-data")
    assert default_runs_dir() == Path("/tmp/x-data/evals")
