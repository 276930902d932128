"""Cutting a history into units that compression may keep or drop whole: a tool call stays
with its results."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from raf.core.messages import ChatMessage, Role
from raf.core.tokens import TokenCounter, count_messages_tokens


@dataclass(kw_only=True, slots=True)
class Unit:
    """Consecutive messages that must stay together: an assistant message with tool calls
    and the messages carrying their results, or a single message."""

    messages: list[ChatMessage] = field(default_factory=list)

    @property
    def is_system(self) -> bool:
        return len(self.messages) == 1 and self.messages[0].role is Role.SYSTEM

    @property
    def has_calls(self) -> bool:
        return any(m.function_calls for m in self.messages)

    def tokens(self, counter: TokenCounter) -> int:
        return count_messages_tokens(self.messages, counter)


def _only_results(message: ChatMessage) -> bool:
    return bool(message.contents) and len(message.function_results) == len(message.contents)


def split_units(messages: Sequence[ChatMessage]) -> list[Unit]:
    """Units in order. A call's results are gathered into its unit while they follow it."""
    units: list[Unit] = []
    open_unit: Unit | None = None
    waiting: set[str] = set()
    for message in messages:
        results = {r.call_id for r in message.function_results}
        if open_unit is not None and waiting and results and results <= waiting:
            open_unit.messages.append(message)
            waiting -= results
            if not waiting:
                open_unit = None
            continue
        open_unit = None
        waiting = set()
        unit = Unit(messages=[message])
        units.append(unit)
        calls = {c.call_id for c in message.function_calls}
        answered = results & calls
        if calls - answered:
            open_unit = unit
            waiting = calls - answered
    return units


def join_units(units: Sequence[Unit]) -> list[ChatMessage]:
    return [m for u in units for m in u.messages]


def dangling(messages: Sequence[ChatMessage]) -> tuple[set[str], set[str]]:
    """(calls without a result, results without a call) of a history."""
    calls: set[str] = set()
    results: set[str] = set()
    orphans: set[str] = set()
    for message in messages:
        for c in message.function_calls:
            calls.add(c.call_id)
        for r in message.function_results:
            if r.call_id not in calls:
                orphans.add(r.call_id)
            results.add(r.call_id)
    return calls - results, orphans
