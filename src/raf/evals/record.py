"""Turn what already happened (a stored session, a transcript) into cases to run again."""

from __future__ import annotations

from collections.abc import Sequence

from raf.core.contents import TextContent
from raf.core.messages import ChatMessage, Role
from raf.core.sessions import AgentSession
from raf.evals.case import Case, ExpectedCall
from raf.evals.evaluators import ToolCalls


def turn_starts(messages: Sequence[ChatMessage]) -> list[int]:
    """Where each turn of a transcript starts: the index of every user message with text
    (a user message that only answers an approval goes on with its turn)."""
    return [i for i, m in enumerate(messages) if m.role is Role.USER and m.text]


def _spoken(message: ChatMessage) -> ChatMessage:
    if not message.function_calls:
        return message
    return ChatMessage(
        role=message.role,
        contents=[TextContent(text=message.text)],
        author_name=message.author_name,
    )


def _one_turn(messages: Sequence[ChatMessage], turn: int, name: str) -> Sequence[ChatMessage]:
    starts = turn_starts(messages)
    if not -len(starts) <= turn < len(starts):
        raise IndexError(
            f"case {name!r}: there is no turn {turn}; the transcript has {len(starts)} "
            f"turn(s), numbered from 0"
        )
    following = turn % len(starts) + 1
    return messages[: starts[following]] if following < len(starts) else messages


def case_from_messages(
    messages: Sequence[ChatMessage],
    *,
    name: str,
    tags: Sequence[str] = (),
    turn: int | None = None,
) -> Case:
    """A case from one turn of a transcript (`turn`: 0 the first, -1 the last; the last
    when None): what came before the turn's user message (and it) is the input, as text
    messages; the final answer the expected output; the tools called after it the
    expected trajectory (checked in order when there are any)."""
    if turn is not None:
        messages = _one_turn(messages, turn, name)
    last_user = max(
        (i for i, m in enumerate(messages) if m.role is Role.USER and m.text), default=None
    )
    if last_user is None:
        raise ValueError(f"case {name!r}: the transcript has no user message to start from")
    # earlier turns' tool calls and results are left out (their answers stay): a model
    # refuses a call without its result, and a case file keeps only text anyway
    prompt = [_spoken(m) for m in messages[: last_user + 1] if m.role is not Role.TOOL and m.text]
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
    session: AgentSession,
    *,
    name: str | None = None,
    tags: Sequence[str] = (),
    turn: int | None = None,
) -> Case:
    """A case from one turn of a stored session, the last unless `turn` says (see
    `case_from_messages`)."""
    return case_from_messages(session.messages, name=name or session.id, tags=tags, turn=turn)
