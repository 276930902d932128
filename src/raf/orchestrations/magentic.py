"""Magentic: a manager plans, keeps a progress ledger each step, picks who acts next, and
re-plans when the team stalls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage
from raf.orchestrations.base import Orchestration, Outcome
from raf.orchestrations.parsing import answer_of, json_object, name_in, truthy
from raf.orchestrations.runtime import Member, OrchestrationError, Runtime

LEDGER_KEYS = (
    "is_request_satisfied",
    "is_progress_being_made",
    "is_in_loop",
    "next_speaker",
    "instruction_or_question",
)
LEDGER_ATTEMPTS = 2
"""How often the manager is asked for a ledger it can be read from before the run fails."""


class MagenticOrchestration(Orchestration):
    """`MagenticOrchestration(manager, [researcher, coder], max_iterations=15)`.

    The manager first writes the facts and a plan. Then, each iteration, it answers a
    progress ledger (a JSON object: is the request satisfied, is progress being made, is
    the team in a loop, who speaks next, with what instruction); the member it names acts
    on the instruction, seeing the task and every answer so far. When the team makes no
    progress or loops for more than `max_stalls` iterations in a row, the manager re-plans.
    When the request is satisfied, or after `max_iterations`, the manager writes the answer.
    """

    mode = "magentic"

    def __init__(
        self,
        manager: Member,
        members: Sequence[Member],
        *,
        name: str = "magentic",
        description: str = "",
        max_iterations: int = 15,
        max_stalls: int = 3,
    ) -> None:
        super().__init__(members, name=name, description=description)
        if not self.members:
            raise ConfigurationError(f"magentic orchestration {name!r} needs a member")
        if manager.name in {m.name for m in self.members}:
            raise ConfigurationError(f"the manager {manager.name!r} cannot also be a member")
        if max_iterations < 1:
            raise ConfigurationError("max_iterations must be at least 1")
        if max_stalls < 0:
            raise ConfigurationError("max_stalls must not be negative")
        self.manager = manager
        self.max_iterations = max_iterations
        self.max_stalls = max_stalls

    def _roster(self) -> str:
        return "\n".join(f"- {m.name}: {m.description or 'a member'}" for m in self.members)

    async def orchestrate(self, rt: Runtime, conversation: list[ChatMessage]) -> Outcome:
        plan = await self._plan(rt, conversation, None)
        plans = [plan]
        ledger: list[dict[str, Any]] = []
        stalls = 0
        stopped = "max_iterations"
        for _ in range(self.max_iterations):
            entry = await self._ledger(rt, conversation, plan)
            ledger.append(entry)
            if truthy(entry.get("is_request_satisfied")):
                stopped = "satisfied"
                break
            stuck = not truthy(entry.get("is_progress_being_made")) or truthy(
                entry.get("is_in_loop")
            )
            stalls = stalls + 1 if stuck else max(0, stalls - 1)
            if stalls > self.max_stalls:
                rt.note("the team is stuck: the manager re-plans")
                plan = await self._plan(rt, conversation, plan)
                plans.append(plan)
                stalls = 0
                continue
            speaker = self._speaker(entry)
            instruction = str(answer_of(entry.get("instruction_or_question")) or "")
            rt.note(f"{speaker.name}: {instruction}")
            await rt.turn(speaker, [*conversation, *rt.transcript, ChatMessage.user(instruction)])
        closing = (
            "The request is satisfied."
            if stopped == "satisfied"
            else f"The team reached the limit of {self.max_iterations} iterations."
        )
        final = ChatMessage.user(
            f"{closing} Write the final answer to the task, from the team's work above."
        )
        answer = await rt.turn(self.manager, [*conversation, *rt.transcript, final])
        details = {"plans": plans, "ledger": ledger, "stopped": stopped}
        return Outcome(answer=answer.message, details=details)

    async def _plan(self, rt: Runtime, conversation: list[ChatMessage], old: str | None) -> str:
        if old is None:
            ask = (
                f"You lead a team on the task above. Team:\n{self._roster()}\n"
                "List the facts given and the facts to find, then a short step-by-step plan "
                "that says which member does each step."
            )
            given = [*conversation, ChatMessage.user(ask)]
        else:
            ask = (
                f"The team is stuck. The plan was:\n{old}\nUpdate the facts from what was "
                "learnt, and write a new plan that avoids what went wrong."
            )
            given = [*conversation, *rt.transcript, ChatMessage.user(ask)]
        return (await rt.turn(self.manager, given, visible=False)).text

    async def _ledger(
        self, rt: Runtime, conversation: list[ChatMessage], plan: str
    ) -> dict[str, Any]:
        names = ", ".join(m.name for m in self.members)
        ask = ChatMessage.user(
            f"Plan:\n{plan}\n\nTeam:\n{self._roster()}\n\nReview the progress so far and "
            'answer with a JSON object with these keys, each {"answer": ..., "reason": '
            "...}: is_request_satisfied (bool), is_progress_being_made (bool), is_in_loop "
            f"(bool), next_speaker (one of: {names}), instruction_or_question (what the next "
            "speaker should do)."
        )
        given = [*conversation, *rt.transcript, ask]
        for _ in range(LEDGER_ATTEMPTS):
            reply = await rt.turn(self.manager, given, visible=False)
            entry = json_object(reply.text)
            if entry is not None and all(k in entry for k in LEDGER_KEYS):
                return entry
            given = [
                *given,
                reply.message,
                ChatMessage.user(
                    "That was not a JSON object with the keys " + ", ".join(LEDGER_KEYS) + "."
                ),
            ]
        raise OrchestrationError(
            f"magentic orchestration {self.name!r}: the manager gave no readable progress "
            f"ledger in {LEDGER_ATTEMPTS} attempts; its last answer: {reply.text!r}"
        )

    def _speaker(self, entry: dict[str, Any]) -> Member:
        names = [m.name for m in self.members]
        said = str(answer_of(entry.get("next_speaker")) or "")
        chosen = name_in(said, names)
        if chosen is None:
            raise OrchestrationError(
                f"magentic orchestration {self.name!r}: the manager named {said!r} as next "
                f"speaker, which is no member (members: {', '.join(names)})"
            )
        return self.member(chosen)
