"""What got better or worse between two eval runs of the same dataset, regressions first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from raf.evals.report import CaseResult, EvalReport, failure_reason

_ORDER = {"regressed": 0, "removed": 1, "improved": 2, "new": 3, "same": 4}


@dataclass(kw_only=True, slots=True)
class CaseChange:
    """One case in both runs (or in one of them)."""

    case: str
    kind: str
    """`regressed`, `improved`, `same`, `new` (only in the second run) or `removed`."""
    before: float | None
    """Share of the case's repeats that passed in the first run (None: not there)."""
    after: float | None
    before_score: float | None = None
    after_score: float | None = None
    reason: str = ""
    """Why the second run did not pass, when it did not."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "kind": self.kind,
            "before": self.before,
            "after": self.after,
            "before_score": self.before_score,
            "after_score": self.after_score,
            "reason": self.reason,
        }


@dataclass(kw_only=True, slots=True)
class Comparison:
    """The changes from `before` to `after`, regressions first."""

    before: str
    after: str
    changes: list[CaseChange] = field(default_factory=list)
    before_pass_rate: float = 0.0
    after_pass_rate: float = 0.0

    @property
    def regressions(self) -> list[CaseChange]:
        return [c for c in self.changes if c.kind == "regressed"]

    @property
    def improvements(self) -> list[CaseChange]:
        return [c for c in self.changes if c.kind == "improved"]

    @property
    def has_regressions(self) -> bool:
        return bool(self.regressions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "before": self.before,
            "after": self.after,
            "before_pass_rate": self.before_pass_rate,
            "after_pass_rate": self.after_pass_rate,
            "regressions": len(self.regressions),
            "improvements": len(self.improvements),
            "changes": [c.to_dict() for c in self.changes],
        }

    def table(self) -> str:
        """Plain text: the changed cases, regressions first, then the pass rates."""
        lines = []
        for change in self.changes:
            if change.kind == "same":
                continue
            before = "-" if change.before is None else f"{change.before:.0%}"
            after = "-" if change.after is None else f"{change.after:.0%}"
            line = f"{change.kind:<9}  {change.case}  {before} -> {after}"
            if change.reason and change.kind == "regressed":
                line += f"  ({change.reason})"
            lines.append(line)
        if not lines:
            lines.append("no case changed")
        lines.append(
            f"pass rate {self.before_pass_rate:.0%} -> {self.after_pass_rate:.0%}; "
            f"{len(self.regressions)} regressed, {len(self.improvements)} improved"
        )
        return "\n".join(lines)


def _by_case(report: EvalReport) -> dict[str, list[CaseResult]]:
    out: dict[str, list[CaseResult]] = {}
    for result in report.results:
        out.setdefault(result.case, []).append(result)
    return out


def compare(before: EvalReport, after: EvalReport) -> Comparison:
    """The case-by-case changes from `before` to `after`.

    A case regressed when a smaller share of its repeats passed, improved when a larger
    share did."""
    old, new = _by_case(before), _by_case(after)
    changes: list[CaseChange] = []
    for name in [*old, *(n for n in new if n not in old)]:
        a, b = old.get(name), new.get(name)
        rate_a = sum(r.passed for r in a) / len(a) if a else None
        rate_b = sum(r.passed for r in b) / len(b) if b else None
        score_a = sum(r.score for r in a) / len(a) if a else None
        score_b = sum(r.score for r in b) / len(b) if b else None
        if rate_a is None:
            kind = "new"
        elif rate_b is None:
            kind = "removed"
        elif rate_b < rate_a:
            kind = "regressed"
        elif rate_b > rate_a:
            kind = "improved"
        else:
            kind = "same"
        reason = failure_reason(r for r in b if not r.passed) if b else ""
        changes.append(
            CaseChange(
                case=name,
                kind=kind,
                before=rate_a,
                after=rate_b,
                before_score=score_a,
                after_score=score_b,
                reason=reason,
            )
        )
    changes.sort(key=lambda c: _ORDER[c.kind])
    return Comparison(
        before=before.name or before.target,
        after=after.name or after.target,
        changes=changes,
        before_pass_rate=before.pass_rate,
        after_pass_rate=after.pass_rate,
    )
