"""Turn what already happened (a stored session, a transcript) into cases to run again."""

from __future__ import annotations

from collections.abc import Sequence

from raf.core.messages import ChatMessage, Role
from raf.core.sessions import AgentSession
from raf.evals.case import Case, ExpectedCall
from raf.evals.evaluators import ToolCalls


def case_from_messages(
    messages: Sequence[ChatMessage], *, name: str, tags: Sequence[str] = ()
) -> Case:
    """A case from one turn of a transcript: what came before the last user message
    (and it) is the input; the final answer the expected output; the tools called after
    it the expected trajectory (checked in order when there are any)."""
    last_user = max(
        (i for i, m in enumerate(messages) if m.role is Role.USER and m.text), default=None
    )
    if last_user is None:
        raise ValueError(f"case {name!r}: the transcript has no user message to start from")
    prompt = [m for m in messages[: last_user + 1] if m.role is not Role.TOOL]
    after = messages[last_user + 1 :]
    answer = next((m.text for m in reversed(after) if m.role is Role.ASSISTANT and m.text), None)
    calls = [
        ExpectedCall(name=c.name, arguments=dict(c.arguments))
        for m in after
        for c in m.function_calls
    ]
    only_text = len(prompt) == 1
    return Case(
        name=name,
        input=prompt[0].text if only_text else prompt,
        expected_output=answer,
        expected_tool_calls=calls,
        tags=list(tags),
        evaluators=[ToolCalls()] if calls else [],
    )


def case_from_session(
    session: AgentSession, *, name: str | None = None, tags: Sequence[str] = ()
) -> Case:
    """A case from a stored session's last turn (see `case_from_messages`)."""
    return case_from_messages(session.messages, name=name or session.id, tags=tags)
