"""The edges of a graph: direct (with an optional condition), fan-out, fan-in (a barrier),
switch/case, and loop-back (the only edge that may close a cycle, with a limit)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Condition = Callable[[Any], bool]
"""Decides from a message whether it goes along an edge."""

Selector = Callable[[Any, Sequence[str]], Sequence[str]]
"""Picks, for a message, which of a fan-out's targets receive it."""


def _name(fn: Callable[..., Any] | None) -> str:
    return "" if fn is None else getattr(fn, "__qualname__", type(fn).__name__)


@dataclass(kw_only=True, slots=True)
class Edge:
    """A direct edge; with a `condition`, only messages it accepts pass."""

    source: str
    target: str
    condition: Condition | None = None

    key: str = field(init=False, default="")
    """A stable name of the edge (used in checkpoints and messages)."""

    def __post_init__(self) -> None:
        self.key = f"edge:{self.source}->{self.target}"

    def describe(self) -> str:
        return f"{self.key}?{_name(self.condition)}"


@dataclass(kw_only=True, slots=True)
class FanOutEdge:
    """One source to many targets; each gets every message unless a `selector` picks."""

    source: str
    targets: list[str]
    selector: Selector | None = None

    key: str = field(init=False, default="")
    """A stable name of the edge (used in checkpoints and messages)."""

    def __post_init__(self) -> None:
        self.key = f"fan_out:{self.source}->{','.join(self.targets)}"

    def describe(self) -> str:
        return f"{self.key}?{_name(self.selector)}"


@dataclass(kw_only=True, slots=True)
class FanInEdge:
    """Many sources to one target, a barrier: the target runs once every source has sent,
    with the list of their messages in the order of `sources`."""

    sources: list[str]
    target: str

    key: str = field(init=False, default="")
    """A stable name of the edge (used in checkpoints and messages)."""

    def __post_init__(self) -> None:
        self.key = f"fan_in:{','.join(self.sources)}->{self.target}"

    def describe(self) -> str:
        return self.key


@dataclass(kw_only=True, slots=True)
class Case:
    """One branch of a switch: messages its `condition` accepts go to `target`."""

    condition: Condition
    target: str


@dataclass(kw_only=True, slots=True)
class SwitchEdge:
    """Each message goes to the first case that accepts it, else to `default` (if any)."""

    source: str
    cases: list[Case]
    default: str | None = None

    @property
    def targets(self) -> list[str]:
        out = [c.target for c in self.cases]
        if self.default is not None:
            out.append(self.default)
        return out

    key: str = field(init=False, default="")
    """A stable name of the edge (used in checkpoints and messages)."""

    def __post_init__(self) -> None:
        self.key = f"switch:{self.source}->{','.join(self.targets)}"

    def describe(self) -> str:
        cases = ",".join(f"{_name(c.condition)}=>{c.target}" for c in self.cases)
        return f"switch:{self.source}[{cases};default={self.default}]"


@dataclass(kw_only=True, slots=True)
class LoopEdge:
    """An edge back to an earlier node; taken at most `max_iterations` times per run,
    after which the run fails (`on_limit="fail"`) or the message is dropped ("stop")."""

    source: str
    target: str
    condition: Condition | None = None
    max_iterations: int = 10
    on_limit: Literal["fail", "stop"] = "fail"

    key: str = field(init=False, default="")
    """A stable name of the edge (used in checkpoints and messages)."""

    def __post_init__(self) -> None:
        self.key = f"loop:{self.source}->{self.target}"

    def describe(self) -> str:
        return f"{self.key}?{_name(self.condition)}#{self.max_iterations}:{self.on_limit}"


EdgeGroup = Edge | FanOutEdge | FanInEdge | SwitchEdge | LoopEdge
"""Any edge of a graph."""


def sources_of(edge: EdgeGroup) -> list[str]:
    return list(edge.sources) if isinstance(edge, FanInEdge) else [edge.source]


def targets_of(edge: EdgeGroup) -> list[str]:
    if isinstance(edge, FanOutEdge | SwitchEdge):
        return list(edge.targets)
    return [edge.target]


@dataclass(kw_only=True, slots=True)
class RetryPolicy:
    """How a node's failing handler is retried, and what happens when attempts run out:
    the run fails, the node is skipped (it sends nothing), or `fallback` handles the
    message instead."""

    max_attempts: int = 3
    backoff: float = 0.1
    """Seconds before the second attempt; multiplied by `multiplier` each time after."""
    multiplier: float = 2.0
    max_backoff: float = 10.0
    retry_on: tuple[type[BaseException], ...] = (Exception,)
    on_exhausted: Literal["fail", "skip", "fallback"] = "fail"
    fallback: str | None = None

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (from 1)."""
        return float(min(self.max_backoff, self.backoff * self.multiplier ** (attempt - 1)))


@dataclass(kw_only=True, slots=True)
class NodePolicy:
    """Per-node settings: retries, a timeout per attempt, a compensation for the saga."""

    retry: RetryPolicy | None = None
    timeout: float | None = None
    compensate: Callable[[Any], Any] | None = None
