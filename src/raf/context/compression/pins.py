"""Pinned messages in compression: kept word for word, counted against the budget first,
and put back in their place among what the strategy kept of the rest.

One rule for every strategy: the built-in ones apply it themselves, and `apply_strategy`
(used by the pipeline, the provider and `compact`) applies it to a strategy of your own.
A unit (a tool call with its results) that holds a pinned message is pinned whole, so a
call never loses its result. When the pinned content alone fills the budget it is all
kept and everything else but the system messages is dropped, with a warning: what a user
pinned is never cut, and nothing else can fit.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from raf.context.compression.units import Unit, split_units
from raf.core.messages import ChatMessage, Role
from raf.core.tokens import TokenCounter

log = logging.getLogger("raf.context.compression")

Shorten = Callable[[Sequence[ChatMessage], int, TokenCounter], list[ChatMessage]]
"""A strategy's own work, without the pin rule."""

AnyShorten = Callable[
    [Sequence[ChatMessage], int, TokenCounter], list[ChatMessage] | Awaitable[list[ChatMessage]]
]
"""The same, written as a coroutine or as a plain function."""


def has_pins(messages: Sequence[ChatMessage]) -> bool:
    """Whether any message is pinned."""
    return any(message.pinned for message in messages)


@dataclass(kw_only=True, slots=True)
class PinnedSplit:
    """A history cut into its pinned units (with where each stood) and the rest."""

    pinned: list[tuple[int, Unit]] = field(default_factory=list)
    """Each pinned unit with the index of its first message in the history."""
    rest: list[ChatMessage] = field(default_factory=list)
    """Everything else, in order: what the strategy compresses."""
    starts: dict[int, int] = field(default_factory=dict)
    """`id()` of each message of `rest` that starts a unit → its index in the history:
    where a pinned unit may be put back without parting a call from its result."""
    tokens: int = 0
    """What the pinned units cost."""

    def room(self, budget: int) -> int:
        """The budget left for the rest once the pinned content is counted."""
        return budget - self.tokens

    def rest_when_full(self) -> list[ChatMessage]:
        """What is kept of the rest when the pinned content fills the budget: the system
        messages only (every strategy keeps them)."""
        return [m for m in self.rest if m.role is Role.SYSTEM]

    def merge(self, kept: Sequence[ChatMessage]) -> list[ChatMessage]:
        """`kept` (what a strategy made of the rest) with every pinned unit put back
        before the first kept original that stood after it; new messages (a summary, a
        note) stay where the strategy put them."""
        out: list[ChatMessage] = []
        waiting = list(reversed(self.pinned))
        for message in kept:
            index = self.starts.get(id(message))
            if index is not None:
                while waiting and waiting[-1][0] < index:
                    out.extend(waiting.pop()[1].messages)
            out.append(message)
        while waiting:
            out.extend(waiting.pop()[1].messages)
        return out


def split_pinned(messages: Sequence[ChatMessage], counter: TokenCounter) -> PinnedSplit:
    """The pinned units of `messages` apart from the rest."""
    split = PinnedSplit()
    index = 0
    for unit in split_units(messages):
        if has_pins(unit.messages):
            split.pinned.append((index, unit))
            split.tokens += unit.tokens(counter)
        else:
            split.starts[id(unit.messages[0])] = index
            split.rest.extend(unit.messages)
        index += len(unit.messages)
    return split


def _full(split: PinnedSplit, budget: int) -> bool:
    """True (with a warning) when the pinned content leaves no room for anything else."""
    if split.room(budget) > 0:
        return False
    log.warning(
        "pinned messages alone take %d tokens of a budget of %d: all are kept and "
        "everything else but the system messages is left out",
        split.tokens,
        budget,
    )
    return True


def keep_pinned_sync(
    shorten: Shorten, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
) -> list[ChatMessage]:
    """`shorten(messages, budget, counter)` with the pinned messages kept (see the module)."""
    if not has_pins(messages):
        return shorten(messages, budget, counter)
    split = split_pinned(messages, counter)
    if _full(split, budget):
        return split.merge(split.rest_when_full())
    return split.merge(shorten(split.rest, split.room(budget), counter))


async def keep_pinned(
    shorten: AnyShorten, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
) -> list[ChatMessage]:
    """`keep_pinned_sync` for a strategy that may be a coroutine."""
    if not has_pins(messages):
        kept = shorten(messages, budget, counter)
        return list(await kept) if inspect.isawaitable(kept) else list(kept)
    split = split_pinned(messages, counter)
    if _full(split, budget):
        return split.merge(split.rest_when_full())
    kept = shorten(split.rest, split.room(budget), counter)
    return split.merge(list(await kept) if inspect.isawaitable(kept) else list(kept))
