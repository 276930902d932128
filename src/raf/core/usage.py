"""Token usage of a model call, summed across the calls of a run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(kw_only=True, slots=True)
class UsageDetails:
    """Token counts reported by a model; missing counts are zero."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: UsageDetails) -> UsageDetails:
        return UsageDetails(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UsageDetails:
        return cls(
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            total_tokens=int(data.get("total_tokens", 0)),
            cache_read_tokens=int(data.get("cache_read_tokens", 0)),
            cache_write_tokens=int(data.get("cache_write_tokens", 0)),
            reasoning_tokens=int(data.get("reasoning_tokens", 0)),
        )


LIMIT_NAMES = ("requests", "tool_calls", "input_tokens", "output_tokens", "total_tokens")
"""The figures a `UsageLimits` may cap, in the order they are checked."""


@dataclass(kw_only=True, slots=True, frozen=True)
class UsageLimits:
    """Caps on what a run (or a whole session) may use; a missing cap is no limit."""

    requests: int | None = None
    """Model calls."""
    tool_calls: int | None = None
    """Tool calls run (calls refused by the limit are answered, not run)."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in LIMIT_NAMES:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                from raf.core.errors import ConfigurationError

                raise ConfigurationError(
                    f"a usage limit must be a whole number above 0 (leave it out for no "
                    f"limit), got {value!r}",
                    key_path=f"UsageLimits({name}=...)",
                )

    @property
    def is_empty(self) -> bool:
        return all(getattr(self, name) is None for name in LIMIT_NAMES)


@dataclass(kw_only=True, slots=True)
class UsageTotals:
    """Running counts of a run or a session: model calls, tool calls and tokens."""

    requests: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def add_tokens(self, usage: UsageDetails) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.total_tokens += usage.total_tokens or usage.input_tokens + usage.output_tokens

    def to_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in LIMIT_NAMES}

    @classmethod
    def from_dict(cls, data: Any) -> UsageTotals:
        if not isinstance(data, dict):
            return cls()
        return cls(**{name: int(data.get(name, 0) or 0) for name in LIMIT_NAMES})
