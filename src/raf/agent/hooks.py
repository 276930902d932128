"""The functions an agent calls at each run: dynamic instructions, written from the run's
context (its `deps` above all), and output validators, which check the answer and may
send the model back with `ModelRetry`.

Either kind may take the run's `RunContext` as its first parameter or go without it, and
may be sync or async; each is taken as it is given and called the one way below.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from raf.core.errors import ConfigurationError
from raf.core.run_context import RunContext


def _positional_count(fn: Callable[..., Any], where: str) -> int:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: called as given
        return -1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return -1
    required = [p for p in parameters if p.kind in kinds and p.default is p.empty]
    if any(p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is p.empty for p in parameters):
        raise ConfigurationError(f"{where}: {fn!r} has a required keyword-only parameter")
    return len(required)


async def _settled(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


@dataclass(frozen=True, slots=True)
class InstructionsFunction:
    """Instructions written at each run: `fn(ctx)` or `fn()`, returning text (or None)."""

    fn: Callable[..., str | Awaitable[str | None] | None]
    takes_context: bool

    @classmethod
    def of(cls, fn: Callable[..., Any]) -> InstructionsFunction:
        where = "instructions"
        if not callable(fn):
            raise ConfigurationError(
                f"{where}: expected text or a function (ctx: RunContext) -> str, got {fn!r}"
            )
        count = _positional_count(fn, where)
        if count > 1:
            raise ConfigurationError(
                f"{where}: {getattr(fn, '__name__', fn)!r} takes {count} arguments; an "
                "instructions function takes the run's context (ctx: RunContext[Deps]) or "
                "nothing"
            )
        return cls(fn=fn, takes_context=count != 0)

    async def write(self, context: RunContext[Any]) -> str:
        """This run's text (empty when the function returns None)."""
        text = await _settled(self.fn(context) if self.takes_context else self.fn())
        if text is None:
            return ""
        if not isinstance(text, str):
            raise ConfigurationError(
                f"instructions function {getattr(self.fn, '__name__', self.fn)!r} returned "
                f"{type(text).__name__}; it must return text (str) or None"
            )
        return text


def split_instructions(
    given: str | Callable[..., Any] | Sequence[str | Callable[..., Any]] | None,
) -> tuple[str | None, tuple[InstructionsFunction, ...]]:
    """`Agent(instructions=...)` as the fixed text (joined with newlines) and the
    functions that write the rest at each run."""
    if given is None or isinstance(given, str):
        return given, ()
    items = [given] if callable(given) else list(given)
    texts = [i for i in items if isinstance(i, str)]
    functions = tuple(InstructionsFunction.of(i) for i in items if not isinstance(i, str))
    return ("\n".join(texts) if texts else None), functions


async def dynamic_instructions(
    functions: Sequence[InstructionsFunction], context: RunContext[Any]
) -> list[str]:
    """The text each function writes for this run, in order, empty ones left out."""
    written = [await f.write(context) for f in functions]
    return [t for t in written if t]


@dataclass(frozen=True, slots=True)
class OutputValidator:
    """A check of each final answer: `fn(ctx, output)` or `fn(output)`; it returns the
    output to keep (possibly changed) or raises `ModelRetry` to send the model back."""

    fn: Callable[..., Any]
    takes_context: bool

    @classmethod
    def of(cls, fn: Callable[..., Any]) -> OutputValidator:
        where = "output validator"
        if not callable(fn):
            raise ConfigurationError(
                f"{where}: expected a function (output) or (ctx: RunContext, output), got {fn!r}"
            )
        count = _positional_count(fn, where)
        if count not in (-1, 1, 2):
            raise ConfigurationError(
                f"{where}: {getattr(fn, '__name__', fn)!r} takes {count} arguments; it takes "
                "the answer (output) or the run's context and the answer (ctx, output)"
            )
        return cls(fn=fn, takes_context=count == 2)


async def validate_output(
    validators: Sequence[OutputValidator], context: RunContext[Any], output: Any
) -> Any:
    """The output after every validator, in order (each gets what the one before kept);
    `ModelRetry` from any of them leaves here for the run to send the model back."""
    for validator in validators:
        args = (context, output) if validator.takes_context else (output,)
        kept = await _settled(validator.fn(*args))
        if kept is not None:
            output = kept
    return output
