"""The results of one eval run: per case and repeat, totals, pass@k, flakiness, and their
JSON and text forms."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage
from raf.core.private_files import atomic_write_text
from raf.core.usage import UsageDetails
from raf.evals.case import EvaluationResult

REPORT_FORMAT = "raf.evals.report/1"


@dataclass(kw_only=True, slots=True)
class CaseResult:
    """One run of one case: what went in, what came out, and every evaluator's verdict."""

    case: str
    repeat: int = 0
    input: str = ""
    expected: Any = None
    output: Any = None
    text: str = ""
    transcript: list[ChatMessage] = field(default_factory=list)
    evaluations: list[EvaluationResult] = field(default_factory=list)
    error: str | None = None
    """The target raised: the exception, as `Type: message`."""
    duration: float = 0.0
    usage: UsageDetails | None = None
    requests: int = 0
    tags: list[str] = field(default_factory=list)

    @property
    def errored(self) -> bool:
        return self.error is not None or any(e.errored for e in self.evaluations)

    @property
    def passed(self) -> bool:
        return not self.errored and all(e.passed for e in self.evaluations)

    @property
    def status(self) -> str:
        """`passed`, `failed` or `errored`."""
        if self.errored:
            return "errored"
        return "passed" if self.passed else "failed"

    @property
    def score(self) -> float:
        if self.error is not None:
            return 0.0
        if not self.evaluations:
            return 1.0
        return sum(e.score for e in self.evaluations) / len(self.evaluations)

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "repeat": self.repeat,
            "status": self.status,
            "score": round(self.score, 4),
            "input": self.input,
            "expected": self.expected,
            "output": self.output,
            "text": self.text,
            "transcript": [m.to_dict() for m in self.transcript],
            "evaluations": [e.to_dict() for e in self.evaluations],
            "error": self.error,
            "duration": round(self.duration, 4),
            "usage": self.usage.to_dict() if self.usage else None,
            "requests": self.requests,
            "tags": self.tags,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaseResult:
        usage = data.get("usage")
        return cls(
            case=str(data["case"]),
            repeat=int(data.get("repeat", 0)),
            input=str(data.get("input", "")),
            expected=data.get("expected"),
            output=data.get("output"),
            text=str(data.get("text", "")),
            transcript=[ChatMessage.from_dict(m) for m in data.get("transcript", [])],
            evaluations=[EvaluationResult.from_dict(e) for e in data.get("evaluations", [])],
            error=data.get("error"),
            duration=float(data.get("duration", 0.0)),
            usage=UsageDetails.from_dict(usage) if usage else None,
            requests=int(data.get("requests", 0)),
            tags=list(data.get("tags", [])),
        )


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of k runs drawn from n (c of them passing) passes."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


@dataclass(kw_only=True, slots=True)
class CaseSummary:
    """One case over its repeats."""

    case: str
    runs: int
    passed: int
    errored: int
    mean_score: float

    @property
    def flaky(self) -> bool:
        """Some repeats passed and some did not."""
        return 0 < self.passed < self.runs

    @property
    def status(self) -> str:
        """`passed` when every repeat passed, `errored` when any errored, else `failed`."""
        if self.passed == self.runs:
            return "passed"
        return "errored" if self.errored else "failed"


@dataclass(kw_only=True, slots=True)
class EvalReport:
    """An eval run: the dataset and target names, when, and every case result."""

    dataset: str
    target: str
    results: list[CaseResult] = field(default_factory=list)
    repeat: int = 1
    started_at: float = 0.0
    duration: float = 0.0
    name: str = ""
    """A label for this run (the model, a commit…)."""
    metadata: dict[str, Any] = field(default_factory=dict)

    def cases(self) -> list[CaseSummary]:
        """Each case over its repeats, in dataset order."""
        order: dict[str, list[CaseResult]] = {}
        for result in self.results:
            order.setdefault(result.case, []).append(result)
        return [
            CaseSummary(
                case=name,
                runs=len(runs),
                passed=sum(r.passed for r in runs),
                errored=sum(r.errored for r in runs),
                mean_score=sum(r.score for r in runs) / len(runs),
            )
            for name, runs in order.items()
        ]

    @property
    def pass_rate(self) -> float:
        """Passing runs over all runs (pass@1 averaged over repeats)."""
        if not self.results:
            return 0.0
        return sum(r.passed for r in self.results) / len(self.results)

    def pass_at(self, k: int) -> float:
        """pass@k over the cases: each case's chance that one of k repeats passes."""
        cases = self.cases()
        if not cases:
            return 0.0
        if k < 1 or k > min(c.runs for c in cases):
            raise ValueError(f"pass@{k} needs at least {k} repeats of every case")
        return sum(pass_at_k(c.runs, c.passed, k) for c in cases) / len(cases)

    @property
    def flaky(self) -> list[str]:
        return [c.case for c in self.cases() if c.flaky]

    def summary(self) -> dict[str, Any]:
        runs = self.results
        durations = sorted(r.duration for r in runs)
        out: dict[str, Any] = {
            "cases": len(self.cases()),
            "runs": len(runs),
            "passed": sum(r.passed for r in runs),
            "failed": sum(r.status == "failed" for r in runs),
            "errored": sum(r.errored for r in runs),
            "pass_rate": round(self.pass_rate, 4),
            "median_duration": round(statistics.median(durations), 4) if durations else 0.0,
            "p95_duration": round(percentile(durations, 95), 4) if durations else 0.0,
        }
        if self.repeat > 1 and runs:
            out[f"pass@{self.repeat}"] = round(self.pass_at(self.repeat), 4)
            out["flaky"] = self.flaky
        return out

    def by_tag(self) -> dict[str, tuple[int, int]]:
        """For each tag: (runs passed, runs)."""
        out: dict[str, tuple[int, int]] = {}
        for result in self.results:
            for tag in result.tags or ["(untagged)"]:
                passed, total = out.get(tag, (0, 0))
                out[tag] = (passed + result.passed, total + 1)
        return dict(sorted(out.items()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": REPORT_FORMAT,
            "dataset": self.dataset,
            "target": self.target,
            "name": self.name,
            "repeat": self.repeat,
            "started_at": self.started_at,
            "duration": round(self.duration, 4),
            "metadata": self.metadata,
            "summary": self.summary(),
            "results": [r.to_dict() for r in self.results],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False, default=str)

    def write_json(self, path: str | Path) -> Path:
        target = Path(path)
        atomic_write_text(target, self.to_json())  # private (0600): it holds the answers
        return target

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, file: str | None = None) -> EvalReport:
        if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
            raise ConfigurationError(
                f'not an eval report (no "format": "{REPORT_FORMAT}")', file=file
            )
        try:
            return cls(
                dataset=str(data.get("dataset", "")),
                target=str(data.get("target", "")),
                name=str(data.get("name", "")),
                repeat=int(data.get("repeat", 1)),
                started_at=float(data.get("started_at", 0.0)),
                duration=float(data.get("duration", 0.0)),
                metadata=dict(data.get("metadata") or {}),
                results=[CaseResult.from_dict(r) for r in data.get("results", [])],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"a malformed eval report: {exc}", file=file) from None

    @classmethod
    def read_json(cls, path: str | Path) -> EvalReport:
        file = str(path)
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigurationError(f"cannot read the report: {exc.strerror}", file=file) from None
        except json.JSONDecodeError as exc:
            raise ConfigurationError(
                f"JSON syntax error: {exc.msg}", file=file, line=exc.lineno, column=exc.colno
            ) from None
        return cls.from_dict(data, file=file)

    def table(self, *, width: int = 100) -> str:
        """A plain-text table: one row per case, then the totals."""
        return render_table(self, width=width)


def percentile(sorted_values: list[float], p: float) -> float:
    """The p-th percentile of already sorted values (nearest rank)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def _fit(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def failure_reason(results: Iterable[CaseResult]) -> str:
    """The first reason a run did not pass: the error, else the first failing evaluator."""
    for result in results:
        if result.error:
            return result.error
        for evaluation in result.evaluations:
            if evaluation.error:
                return f"{evaluation.name}: {evaluation.error}"
            if not evaluation.passed:
                return f"{evaluation.name}: {evaluation.reason}"
    return ""


def render_table(report: EvalReport, *, width: int = 100) -> str:
    by_case: dict[str, list[CaseResult]] = {}
    for result in report.results:
        by_case.setdefault(result.case, []).append(result)
    summaries = report.cases()
    name_width = min(32, max([4, *(len(s.case) for s in summaries)]))
    lines = [f"{'case':<{name_width}}  {'status':<7}  {'score':>5}  {'time':>7}  why"]
    for summary in summaries:
        runs = by_case[summary.case]
        status = summary.status
        if report.repeat > 1:
            status = f"{summary.passed}/{summary.runs}"
        mean_time = sum(r.duration for r in runs) / len(runs)
        why = failure_reason(runs) if summary.status != "passed" else ""
        used = name_width + 2 + 7 + 2 + 5 + 2 + 7 + 2
        lines.append(
            f"{_fit(summary.case, name_width):<{name_width}}  {status:<7}  "
            f"{summary.mean_score:>5.2f}  {mean_time:>6.2f}s  {_fit(why, max(10, width - used))}"
        )
    s = report.summary()
    total = (
        f"{s['passed']}/{s['runs']} runs passed ({s['pass_rate']:.0%}), "
        f"{s['failed']} failed, {s['errored']} errored; "
        f"median {s['median_duration']:.2f}s, p95 {s['p95_duration']:.2f}s"
    )
    if report.repeat > 1:
        key = f"pass@{report.repeat}"
        total += f"; {key} {s[key]:.0%}; flaky: {', '.join(s['flaky']) or 'none'}"
    lines.append(total)
    return "\n".join(lines)
