"""Runs cases on a target, N at a time and K times each, judges every run, and never lets
one failing case stop the others."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any, TextIO

from raf.evals.case import Case, Evaluator, EvaluatorContext
from raf.evals.evaluator import run_evaluator
from raf.evals.report import CaseResult, EvalReport
from raf.evals.targets import Outcome, Target, TargetLike, as_target

ProgressCallback = Callable[[int, int, CaseResult], None]
"""Called after each run with (runs done, runs in all, the result)."""


class ProgressBar:
    """A one-line progress bar on a terminal (redrawn in place); silent elsewhere."""

    def __init__(self, stream: TextIO | None = None, *, width: int = 30) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.failed = 0
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())

    def __call__(self, done: int, total: int, result: CaseResult) -> None:
        if not result.passed:
            self.failed += 1
        if not self.enabled:
            return
        filled = int(self.width * done / total) if total else self.width
        bar = "#" * filled + "-" * (self.width - filled)
        end = "\n" if done == total else ""
        self.stream.write(f"\r[{bar}] {done}/{total}  {self.failed} not passed{end}")
        self.stream.flush()


@contextmanager
def _case_span(case: Case, repeat: int, target: str, tracer_provider: Any) -> Iterator[Any]:
    """An OpenTelemetry span for the case when the otel extra is installed (the target's
    own spans nest under it), else nothing."""
    try:
        from raf.observability.spans import operation_span
    except ImportError:
        with nullcontext() as nothing:
            yield nothing
        return
    attributes = {
        "raf.eval.case": case.name,
        "raf.eval.repeat": repeat,
        "raf.eval.target": target,
    }
    with operation_span(f"eval {case.name}", attributes, tracer_provider=tracer_provider) as span:
        yield span


def _close_span(span: Any, result: CaseResult) -> None:
    if span is None:
        return
    from raf.observability.spans import mark_failed

    span.set_attribute("raf.eval.status", result.status)
    span.set_attribute("raf.eval.score", result.score)
    if result.status != "passed":
        mark_failed(span, result.error or result.status)


async def run_case(
    case: Case,
    target: Target,
    evaluators: Sequence[Evaluator],
    *,
    repeat: int = 0,
    tracer_provider: Any = None,
) -> CaseResult:
    """One run of one case, judged by `evaluators` then the case's own."""
    result = CaseResult(
        case=case.name,
        repeat=repeat,
        input=case.input_text(),
        expected=case.expected_output,
        tags=list(case.tags),
    )
    with _case_span(case, repeat, target.name, tracer_provider) as span:
        started = time.perf_counter()
        try:
            outcome: Outcome = await target(case)
        except Exception as exc:
            result.duration = time.perf_counter() - started
            result.error = f"{type(exc).__name__}: {exc}"
            _close_span(span, result)
            return result
        result.duration = time.perf_counter() - started
        result.output = outcome.output if _jsonable(outcome.output) else outcome.text
        result.text = outcome.text
        result.transcript = outcome.messages
        result.usage = outcome.usage
        result.requests = outcome.requests
        ctx = EvaluatorContext(
            case=case,
            output=outcome.output,
            text=outcome.text,
            messages=outcome.messages,
            usage=outcome.usage,
            duration=result.duration,
            requests=outcome.requests,
        )
        for evaluator in [*evaluators, *case.evaluators]:
            result.evaluations.append(await run_evaluator(evaluator, ctx))
        _close_span(span, result)
    return result


def _jsonable(value: Any) -> bool:
    if value is None or isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, list | tuple):
        return all(_jsonable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _jsonable(v) for k, v in value.items())
    return False


async def evaluate_cases(
    cases: Sequence[Case],
    target: TargetLike,
    evaluators: Sequence[Evaluator] = (),
    *,
    dataset: str = "dataset",
    concurrency: int = 4,
    repeat: int = 1,
    progress: ProgressCallback | bool | None = None,
    name: str = "",
    tracer_provider: Any = None,
) -> EvalReport:
    """Every case `repeat` times on `target`, at most `concurrency` at once.

    `progress`: a callback, True/None for a bar on a terminal, False for none."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be 1 or more, got {concurrency}")
    if repeat < 1:
        raise ValueError(f"repeat must be 1 or more, got {repeat}")
    names = [c.name for c in cases]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"case names must be unique; repeated: {', '.join(duplicates)}")
    runner = as_target(target)
    report_progress: ProgressCallback | None
    if progress is False:
        report_progress = None
    elif progress is None or progress is True:
        report_progress = ProgressBar()
    else:
        report_progress = progress
    jobs = [(case, k) for k in range(repeat) for case in cases]
    results: list[CaseResult | None] = [None] * len(jobs)
    gate = asyncio.Semaphore(concurrency)
    done = 0
    started_at = time.time()
    started = time.perf_counter()

    async def one(index: int, case: Case, k: int) -> None:
        nonlocal done
        async with gate:
            result = await run_case(
                case, runner, evaluators, repeat=k, tracer_provider=tracer_provider
            )
        results[index] = result
        done += 1
        if report_progress is not None:
            report_progress(done, len(jobs), result)

    await asyncio.gather(*(one(i, case, k) for i, (case, k) in enumerate(jobs)))
    position = {n: i for i, n in enumerate(names)}
    ordered = sorted(
        (r for r in results if r is not None), key=lambda r: (position[r.case], r.repeat)
    )
    return EvalReport(
        dataset=dataset,
        target=runner.name,
        results=ordered,
        repeat=repeat,
        started_at=started_at,
        duration=time.perf_counter() - started,
        name=name or runner.name,
    )
