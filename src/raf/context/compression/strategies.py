"""Compression strategies that need no model: sliding window, token budget, observation
masking, and the pipeline that chains strategies until the history fits.

`compress` is a coroutine everywhere (a strategy may call a model). The model-free
strategies and a pipeline of them also offer `compress_sync` for code without an event
loop, and the pipeline and provider accept a strategy whose `compress` is a plain
function returning the list (decision 0606).
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Protocol, TypeAlias, runtime_checkable

from raf.context.compression.budget import check_count
from raf.context.compression.pins import keep_pinned, keep_pinned_sync
from raf.context.compression.units import Unit, join_units, split_units
from raf.core.contents import Content, FunctionResultContent, TextContent
from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage, Role
from raf.core.tokens import TokenCounter, count_messages_tokens

OMITTED_NOTE_PREFIX = "[Earlier tool calls omitted to save space:"
MASK_TEMPLATE = (
    "[output of {name} omitted to save space ({tokens} tokens); call it again if needed]"
)


@runtime_checkable
class CompressionStrategy(Protocol):
    """Shortens a history to fit `budget` tokens as counted by `counter`.

    Every strategy keeps tool calls with their results (it never leaves a call without
    its result or a result without its call), keeps system messages, and never changes
    the messages it was given (it returns new ones where it edits). Pinned messages are
    kept word for word by the built-in strategies and, for a strategy of your own, by
    `apply_strategy` (see `raf.context.compression.pins`).
    """

    async def compress(
        self, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
    ) -> list[ChatMessage]: ...


@runtime_checkable
class SyncCompressionStrategy(Protocol):
    """A strategy written as a plain function, as the protocol is written (no `await`); the
    pipeline and `CompressionProvider` accept it beside `CompressionStrategy`."""

    def compress(
        self, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
    ) -> list[ChatMessage]: ...


AnyCompressionStrategy: TypeAlias = CompressionStrategy | SyncCompressionStrategy


async def apply_strategy(
    strategy: AnyCompressionStrategy,
    messages: Sequence[ChatMessage],
    budget: int,
    counter: TokenCounter,
) -> list[ChatMessage]:
    """Run a strategy whether its `compress` is a coroutine or a plain function, the
    pinned messages kept word for word and counted first."""
    return await keep_pinned(strategy.compress, messages, budget, counter)


def apply_strategy_sync(
    strategy: AnyCompressionStrategy,
    messages: Sequence[ChatMessage],
    budget: int,
    counter: TokenCounter,
) -> list[ChatMessage]:
    """Run a strategy without an event loop: its `compress_sync`, or a plain `compress`;
    a strategy that needs `await` (one that calls a model) is a ConfigurationError. The
    pinned messages are kept word for word and counted first."""

    def shorten(
        messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
    ) -> list[ChatMessage]:
        return _compress_sync(strategy, messages, budget, counter)

    return keep_pinned_sync(shorten, messages, budget, counter)


def _compress_sync(
    strategy: AnyCompressionStrategy,
    messages: Sequence[ChatMessage],
    budget: int,
    counter: TokenCounter,
) -> list[ChatMessage]:
    sync = getattr(strategy, "compress_sync", None)
    if callable(sync):
        return list(sync(messages, budget, counter))
    if inspect.iscoroutinefunction(strategy.compress):
        raise ConfigurationError(
            f"{strategy!r} compresses asynchronously (it may call a model); "
            "use `await strategy.compress(...)`"
        )
    result = strategy.compress(messages, budget, counter)
    if inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if callable(close):
            close()
        raise ConfigurationError(f"{strategy!r} returned an awaitable; use `await` to compress")
    return list(result)


class _LoopFreeStrategy(ABC):
    """A strategy that needs no model: `compress_sync` does the work (the pinned messages
    kept), and `compress` offers it to async callers."""

    async def compress(
        self, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
    ) -> list[ChatMessage]:
        return self.compress_sync(messages, budget, counter)

    def compress_sync(
        self, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
    ) -> list[ChatMessage]:
        """Compress without an event loop, the pinned messages kept word for word."""
        return keep_pinned_sync(self._shorten, messages, budget, counter)

    @abstractmethod
    def _shorten(
        self, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
    ) -> list[ChatMessage]:
        """The strategy's own work, on a history with nothing pinned."""


class SlidingWindowStrategy(_LoopFreeStrategy):
    """System messages plus the last `keep_last` messages, cut only between units."""

    def __init__(self, keep_last: int = 20) -> None:
        self.keep_last = check_count("keep_last", keep_last)

    def _shorten(
        self, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
    ) -> list[ChatMessage]:
        units = split_units(messages)
        kept: list[Unit] = []
        count = 0
        for unit in reversed([u for u in units if not u.is_system]):
            if count + len(unit.messages) > self.keep_last:
                break
            kept.append(unit)
            count += len(unit.messages)
        chosen = {id(u) for u in kept}
        return join_units([u for u in units if u.is_system or id(u) in chosen])

    def __repr__(self) -> str:
        return f"SlidingWindowStrategy(keep_last={self.keep_last})"


class TokenBudgetStrategy(_LoopFreeStrategy):
    """Fit the budget: first replace the oldest tool-call units by a short note, then
    drop the oldest messages, until the history is under budget (system messages stay)."""

    def _shorten(
        self, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
    ) -> list[ChatMessage]:
        units = split_units(messages)
        sizes = [u.tokens(counter) for u in units]
        total = sum(sizes)
        if total <= budget:
            return list(messages)
        for i, unit in enumerate(units):
            if total <= budget:
                break
            if unit.is_system or not unit.has_calls:
                continue
            note = _omitted_note(unit)
            note_size = note.tokens(counter)
            if note_size >= sizes[i]:
                continue
            units[i] = note
            total += note_size - sizes[i]
            sizes[i] = note_size
        units, sizes = _merge_notes(units, sizes, counter)
        total = sum(sizes)
        keep = [True] * len(units)
        for i, unit in enumerate(units):
            if total <= budget:
                break
            if unit.is_system:
                continue
            keep[i] = False
            total -= sizes[i]
        return join_units([u for u, k in zip(units, keep, strict=True) if k])

    def __repr__(self) -> str:
        return "TokenBudgetStrategy()"


def _omitted_note(unit: Unit) -> Unit:
    names: dict[str, int] = {}
    for message in unit.messages:
        for c in message.function_calls:
            names[c.name] = names.get(c.name, 0) + 1
    listed = ", ".join(f"{n} ×{k}" if k > 1 else n for n, k in names.items())
    text = f"{OMITTED_NOTE_PREFIX} {listed}]"
    return Unit(messages=[ChatMessage(role=Role.ASSISTANT, contents=[TextContent(text=text)])])


def _is_note(unit: Unit) -> bool:
    return (
        len(unit.messages) == 1
        and unit.messages[0].role is Role.ASSISTANT
        and unit.messages[0].text.startswith(OMITTED_NOTE_PREFIX)
    )


def _merge_notes(
    units: list[Unit], sizes: list[int], counter: TokenCounter
) -> tuple[list[Unit], list[int]]:
    """Adjacent notes become one note listing all the omitted calls."""
    out: list[Unit] = []
    out_sizes: list[int] = []
    for unit, size in zip(units, sizes, strict=True):
        if out and _is_note(unit) and _is_note(out[-1]):
            before = out[-1].messages[0].text[len(OMITTED_NOTE_PREFIX) : -1].strip()
            after = unit.messages[0].text[len(OMITTED_NOTE_PREFIX) : -1].strip()
            text = f"{OMITTED_NOTE_PREFIX} {before}, {after}]"
            merged = Unit(
                messages=[ChatMessage(role=Role.ASSISTANT, contents=[TextContent(text=text)])]
            )
            out[-1] = merged
            out_sizes[-1] = merged.tokens(counter)
            continue
        out.append(unit)
        out_sizes.append(size)
    return out, out_sizes


class ObservationMaskingStrategy(_LoopFreeStrategy):
    """Replace the output of all but the last `keep_last` tool results by a placeholder;
    the calls and their ids stay, so the model knows what it did and may call again."""

    def __init__(self, keep_last: int = 3) -> None:
        self.keep_last = check_count("keep_last", keep_last)

    def _shorten(
        self, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
    ) -> list[ChatMessage]:
        positions = [
            (i, j)
            for i, m in enumerate(messages)
            for j, c in enumerate(m.contents)
            if isinstance(c, FunctionResultContent)
        ]
        cut = len(positions) - self.keep_last
        to_mask = set(positions[: max(0, cut)])
        if not to_mask:
            return list(messages)
        out: list[ChatMessage] = []
        for i, message in enumerate(messages):
            if not any((i, j) in to_mask for j in range(len(message.contents))):
                out.append(message)
                continue
            contents: list[Content] = []
            for j, content in enumerate(message.contents):
                if (i, j) in to_mask and isinstance(content, FunctionResultContent):
                    contents.append(_masked(content, counter))
                else:
                    contents.append(content)
            out.append(
                ChatMessage(
                    role=message.role,
                    contents=contents,
                    author_name=message.author_name,
                    message_id=message.message_id,
                )
            )
        return out

    def __repr__(self) -> str:
        return f"ObservationMaskingStrategy(keep_last={self.keep_last})"


def _masked(result: FunctionResultContent, counter: TokenCounter) -> FunctionResultContent:
    text = result.as_text()
    placeholder = MASK_TEMPLATE.format(name=result.name or "the tool", tokens=counter.count(text))
    if len(placeholder) >= len(text):
        return result
    return FunctionResultContent(call_id=result.call_id, result=placeholder, name=result.name)


class CompressionPipeline:
    """Apply strategies in order, stopping as soon as the history is under budget (the
    pinned messages are set apart once, before the first)."""

    def __init__(self, strategies: Sequence[AnyCompressionStrategy]) -> None:
        self.strategies = list(strategies)

    async def compress(
        self, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
    ) -> list[ChatMessage]:
        return await keep_pinned(self._shorten, messages, budget, counter)

    async def _shorten(
        self, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
    ) -> list[ChatMessage]:
        current = list(messages)
        for strategy in self.strategies:
            if count_messages_tokens(current, counter) <= budget:
                break
            current = await apply_strategy(strategy, current, budget, counter)
        return current

    def compress_sync(
        self, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
    ) -> list[ChatMessage]:
        """`compress` without an event loop, for pipelines of model-free strategies."""
        return keep_pinned_sync(self._shorten_sync, messages, budget, counter)

    def _shorten_sync(
        self, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
    ) -> list[ChatMessage]:
        current = list(messages)
        for strategy in self.strategies:
            if count_messages_tokens(current, counter) <= budget:
                break
            current = apply_strategy_sync(strategy, current, budget, counter)
        return current

    def __repr__(self) -> str:
        return f"CompressionPipeline({self.strategies!r})"
