"""Sequential: members speak one after another, each handed the last answer or the whole
conversation so far."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage
from raf.orchestrations.base import Orchestration, Outcome
from raf.orchestrations.runtime import Member, Runtime

PassOn = Literal["output", "conversation", "task"]
PASS_ON: tuple[str, ...] = ("output", "conversation", "task")


class SequentialOrchestration(Orchestration):
    """`SequentialOrchestration([writer, editor])`: the last member's answer is the result.

    `pass_on="output"` (default) gives each member after the first only the previous
    member's answer, as a user message; `"conversation"` gives it the task and every
    answer so far, each tagged with its author; `"task"` gives every member the task
    alone (no member sees another's answer).
    """

    mode = "sequential"

    def __init__(
        self,
        members: Sequence[Member],
        *,
        name: str = "sequential",
        description: str = "",
        pass_on: PassOn = "output",
    ) -> None:
        super().__init__(members, name=name, description=description)
        if not self.members:
            raise ConfigurationError(f"sequential orchestration {name!r} needs a member")
        if pass_on not in PASS_ON:
            raise ConfigurationError(
                f"pass_on must be one of {', '.join(PASS_ON)}, not {pass_on!r}"
            )
        self.pass_on = pass_on

    async def orchestrate(self, rt: Runtime, conversation: list[ChatMessage]) -> Outcome:
        return Outcome(answer=await run_in_sequence(rt, self.members, conversation, self.pass_on))


async def run_in_sequence(
    rt: Runtime, members: Sequence[Member], conversation: list[ChatMessage], pass_on: str
) -> ChatMessage:
    """Each member in turn; returns the last answer (shared with pipelines)."""
    given = list(conversation)
    answer: ChatMessage | None = None
    for member in members:
        result = await rt.turn(member, given)
        answer = result.message
        if pass_on == "conversation":
            given = [*given, result.message]
        elif pass_on != "task":
            given = [ChatMessage.user(result.text)]
    assert answer is not None  # members is not empty
    return answer
