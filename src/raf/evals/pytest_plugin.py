"""pytest support: a dataset runs as tests, one test per case.

Two ways, both with `-p raf.evals.pytest_plugin` or the installed entry point:

* in Python, parametrize over `dataset_cases(path)` and check each with the `raf_eval`
  fixture: `raf_eval.check(case, agent)` (or `await raf_eval.acheck(case, agent)`);
* with no Python at all, set `raf_eval_target = module:attribute` in the pytest ini
  options: every `eval_*.yaml` / `eval_*.yml` file under the test paths is collected, one
  test per case, run against that target (an agent, a workflow, a URL or a function, or
  a function of no arguments that returns one).

A case that does not pass fails its test with every failing evaluator's reason.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from raf.evals.case import Case
from raf.evals.dataset import Dataset
from raf.evals.report import CaseResult
from raf.evals.run import run_case
from raf.evals.specs import import_ref
from raf.evals.targets import TargetLike, as_target

TARGET_OPTION = "raf_eval_target"


@dataclass(kw_only=True, slots=True)
class EvalCase:
    """A case and the dataset it belongs to (whose evaluators it gets)."""

    dataset: Dataset
    case: Case

    def __str__(self) -> str:
        return self.case.name


def dataset_cases(path: str | Path) -> list[Any]:
    """`pytest.param`s of a dataset file's cases, each with the case name as its id."""
    dataset = Dataset.from_file(path)
    return [pytest.param(EvalCase(dataset=dataset, case=c), id=c.name) for c in dataset.cases]


def failure_message(result: CaseResult) -> str:
    """Why a case did not pass, for a test report."""
    lines = [f"case {result.case!r} {result.status}"]
    if result.error:
        lines.append(f"  the target raised {result.error}")
    for evaluation in result.evaluations:
        if evaluation.errored:
            lines.append(f"  {evaluation.name}: errored: {evaluation.error}")
        elif not evaluation.passed:
            lines.append(f"  {evaluation.name}: {evaluation.reason}")
    lines.append(f"  answer: {result.text[:500]!r}")
    return "\n".join(lines)


class EvalChecker:
    """Runs one case on a target and fails the test unless it passes."""

    async def acheck(self, item: EvalCase, target: TargetLike) -> CaseResult:
        result = await run_case(item.case, as_target(target), item.dataset.evaluators)
        if not result.passed:
            pytest.fail(failure_message(result), pytrace=False)
        return result

    def check(self, item: EvalCase, target: TargetLike) -> CaseResult:
        return asyncio.run(self.acheck(item, target))


@pytest.fixture
def raf_eval() -> EvalChecker:
    """Checks eval cases: `raf_eval.check(case, target)`."""
    return EvalChecker()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        TARGET_OPTION,
        "module:attribute of the target that eval_*.yaml datasets run against",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "raf_eval: a case of an eval dataset")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if not file_path.name.startswith("eval_") or file_path.suffix not in (".yaml", ".yml"):
        return None
    if not parent.config.getini(TARGET_OPTION):
        return None
    collected: pytest.Collector = DatasetFile.from_parent(parent, path=file_path)
    return collected


def _target(config: pytest.Config) -> Any:
    found = import_ref(str(config.getini(TARGET_OPTION)), TARGET_OPTION)
    if inspect.isfunction(found) and not inspect.signature(found).parameters:
        found = found()
    return found


class DatasetFile(pytest.File):
    """An `eval_*.yaml` dataset: one test per case."""

    def collect(self) -> Iterator[pytest.Item]:
        dataset = Dataset.from_file(self.path)
        for case in dataset.cases:
            yield CaseItem.from_parent(
                self, name=case.name, item=EvalCase(dataset=dataset, case=case)
            )


class CaseItem(pytest.Item):
    """One case of a collected dataset."""

    def __init__(self, *, item: EvalCase, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.eval_case = item
        self.add_marker("raf_eval")

    def runtest(self) -> None:
        EvalChecker().check(self.eval_case, _target(self.config))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"eval case {self.name}"
