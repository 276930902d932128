"""Group chat: members take turns on a shared conversation; a selector picks each speaker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage
from raf.orchestrations.base import Orchestration, Outcome
from raf.orchestrations.parsing import json_object, name_in
from raf.orchestrations.runtime import Member, OrchestrationError, Runtime, said

_QUOTED = 200
"""The most of a coordinator's answer an error quotes (a small model may write pages)."""

SELECTORS: tuple[str, ...] = ("round_robin", "fixed", "coordinator")
DONE = "DONE"


class GroupChatOrchestration(Orchestration):
    """`GroupChatOrchestration([writer, critic], max_rounds=6, termination_keywords=["APPROVED"])`.

    Every speaker sees the task and every answer so far. The speaker is picked by
    `selector`: "round_robin" (members in turn), "fixed" (the names in `order`, cycled),
    or an agent, the coordinator, asked each round who speaks next (it answers a name, or
    DONE to end). The chat ends after `max_rounds` answers, when an answer contains one of
    `termination_keywords` (any case), or when the coordinator says DONE; the last answer
    is the result.
    """

    mode = "group_chat"

    def __init__(
        self,
        members: Sequence[Member],
        *,
        name: str = "group_chat",
        description: str = "",
        selector: Literal["round_robin", "fixed"] | Member = "round_robin",
        order: Sequence[str] | None = None,
        max_rounds: int = 10,
        termination_keywords: Sequence[str] = (),
    ) -> None:
        super().__init__(members, name=name, description=description)
        if not self.members:
            raise ConfigurationError(f"group chat {name!r} needs a member")
        if max_rounds < 1:
            raise ConfigurationError("max_rounds must be at least 1")
        if isinstance(selector, str) and selector not in ("round_robin", "fixed"):
            raise ConfigurationError(
                f"selector must be 'round_robin', 'fixed' or a coordinator agent, not {selector!r}"
            )
        names = [m.name for m in self.members]
        if selector == "fixed":
            if not order:
                raise ConfigurationError("a 'fixed' selector needs 'order': the member names")
            for who in order:
                if who not in names:
                    raise ConfigurationError(
                        f"group chat {name!r}: 'order' names {who!r}, which is no member "
                        f"(members: {', '.join(names)})"
                    )
        elif order:
            raise ConfigurationError("'order' is only for the 'fixed' selector")
        self.selector = selector
        self.order = list(order or names)
        self.max_rounds = max_rounds
        self.termination_keywords = [k for k in termination_keywords if k]

    async def orchestrate(self, rt: Runtime, conversation: list[ChatMessage]) -> Outcome:
        answer: ChatMessage | None = None
        stopped = "max_rounds"
        rounds = 0
        for index in range(self.max_rounds):
            speaker = await self._next(rt, conversation, index)
            if speaker is None:
                stopped = "coordinator"
                break
            result = await rt.turn(speaker, [*conversation, *rt.transcript])
            answer = result.message
            rounds += 1
            if self._terminates(result.text):
                stopped = "keyword"
                break
        if answer is None:
            answer = said(self.name, "The coordinator ended the chat before anyone spoke.")
        return Outcome(answer=answer, details={"rounds": rounds, "stopped": stopped})

    def _terminates(self, text: str) -> bool:
        lowered = text.lower()
        return any(k.lower() in lowered for k in self.termination_keywords)

    async def _next(
        self, rt: Runtime, conversation: list[ChatMessage], index: int
    ) -> Member | None:
        if isinstance(self.selector, str):
            return self.member(self.order[index % len(self.order)])
        names = [m.name for m in self.members]
        roster = "\n".join(f"- {m.name}: {m.description or 'a member'}" for m in self.members)
        ask = ChatMessage.user(
            "You coordinate a group chat working on the task above. Members:\n"
            f"{roster}\nWho should speak next? Answer with the member's name only, or "
            f"{DONE} when the task is complete."
        )
        reply = await rt.turn(self.selector, [*conversation, *rt.transcript, ask], visible=False)
        text = reply.text
        parsed = json_object(text)
        if parsed is not None and isinstance(parsed.get("next"), str):
            text = parsed["next"]
        if text.strip().strip(".").upper() == DONE:
            rt.note("the coordinator ends the chat")
            return None
        chosen = name_in(text, names)
        if chosen is None:
            said_ = reply.text if len(reply.text) <= _QUOTED else f"{reply.text[:_QUOTED]}…"
            raise OrchestrationError(
                f"group chat {self.name!r}: the coordinator answered {said_!r}, which "
                f"names no member (members: {', '.join(names)}) and is not {DONE}; a "
                "coordinator needs a model that follows this format"
            )
        rt.note(f"the coordinator picks {chosen}")
        return self.member(chosen)
