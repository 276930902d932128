"""Concurrent: every member answers the same task at once; an aggregator joins the answers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import cast

from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage
from raf.orchestrations.base import Orchestration, Outcome
from raf.orchestrations.runtime import Member, Runtime, TurnResult, is_member, said

AggregateFunction = Callable[[list[TurnResult]], str | Awaitable[str]]
"""Joins the members' answers (in member order) into the answer's text."""


class ConcurrentOrchestration(Orchestration):
    """`ConcurrentOrchestration([a, b, c], aggregator=...)`.

    The aggregator is an agent (given the task and every answer, tagged by member, it
    writes the answer), a function of the answers, or nothing: then the answer lists each
    member's answer under its name.
    """

    mode = "concurrent"

    def __init__(
        self,
        members: Sequence[Member],
        *,
        name: str = "concurrent",
        description: str = "",
        aggregator: Member | AggregateFunction | None = None,
        max_concurrency: int | None = None,
    ) -> None:
        super().__init__(members, name=name, description=description)
        if not self.members:
            raise ConfigurationError(f"concurrent orchestration {name!r} needs a member")
        if max_concurrency is not None and max_concurrency < 1:
            raise ConfigurationError("max_concurrency must be at least 1")
        self.aggregator = aggregator
        self.max_concurrency = max_concurrency

    async def orchestrate(self, rt: Runtime, conversation: list[ChatMessage]) -> Outcome:
        answers = await run_together(rt, self.members, conversation, self.max_concurrency)
        answer = await aggregate(rt, self.name, self.aggregator, conversation, answers)
        return Outcome(answer=answer)


async def run_together(
    rt: Runtime,
    members: Sequence[Member],
    conversation: list[ChatMessage],
    max_concurrency: int | None = None,
) -> list[TurnResult]:
    """Every member on the same conversation at once, at most `max_concurrency` running."""
    import asyncio

    limit = asyncio.Semaphore(max_concurrency or len(members))

    async def bounded(turn: Awaitable[TurnResult]) -> TurnResult:
        async with limit:
            return await turn

    return await rt.gather([bounded(rt.turn(m, conversation)) for m in members])


def joined(answers: Sequence[TurnResult]) -> str:
    """The default aggregation: each answer under its member's name."""
    return "\n\n".join(f"[{a.member}]\n{a.text}" for a in answers)


async def aggregate(
    rt: Runtime,
    name: str,
    aggregator: Member | AggregateFunction | None,
    conversation: list[ChatMessage],
    answers: list[TurnResult],
) -> ChatMessage:
    """The answer the aggregator makes of the members' answers."""
    if aggregator is None:
        return said(name, joined(answers))
    if is_member(aggregator):
        member = cast(Member, aggregator)
        prompt = ChatMessage.user(
            "The members answered the task above. Combine their answers into one answer.\n\n"
            + joined(answers)
        )
        return (await rt.turn(member, [*conversation, prompt])).message
    function = cast(AggregateFunction, aggregator)
    text = function(answers)
    if not isinstance(text, str):
        text = await text
    return said(name, text)
