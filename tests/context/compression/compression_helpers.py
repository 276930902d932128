"""Histories for compression tests: user turns, answers, and tool-call groups."""

from __future__ import annotations

from collections.abc import Sequence

from raf.core.agent_like import AgentLike
from raf.core.contents import FunctionCallContent, FunctionResultContent
from raf.core.function_tool import tool
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.core.sessions import AgentSession
from raf.testing import FunctionChatClient, call, reply


def tool_group(
    index: int, sizes: list[int], *, one_message: bool = False, name: str = "read_file"
) -> list[ChatMessage]:
    """An assistant message calling `len(sizes)` tools, then their results."""
    calls = [
        FunctionCallContent(call_id=f"c{index}_{k}", name=name, arguments={"path": f"f{k}.txt"})
        for k in range(len(sizes))
    ]
    results = [
        FunctionResultContent(call_id=c.call_id, result="x" * size, name=name)
        for c, size in zip(calls, sizes, strict=True)
    ]
    out = [ChatMessage.assistant("", calls=calls)]
    if one_message:
        out.append(ChatMessage(role=Role.TOOL, contents=list(results)))
    else:
        out += [ChatMessage(role=Role.TOOL, contents=[r]) for r in results]
    return out


def history(turns: int, *, result_size: int = 2_000, system: bool = True) -> list[ChatMessage]:
    """`turns` turns of: user question, a tool call with a big result, an answer."""
    out = [ChatMessage.system("You are a helpful assistant.")] if system else []
    for i in range(turns):
        out.append(ChatMessage.user(f"question {i}: please look at file {i}"))
        out += tool_group(i, [result_size])
        out.append(ChatMessage.assistant(f"answer {i}: the file says something"))
    return out


# -- a long conversation with pinned facts ---------------------------------------------

FACT = "My account number is ACC-7731-QX and the deadline is 14 March 2031."
"""What the user states early and pins."""

TOOL_FACT = (
    "Vault code for the Lisbon office: 55-0192-LX; it is valid until the spring audit, "
    "and only the facilities team may change it."
)
"""What a tool answers early, in a result the user pins."""

SUMMARY = "Summary: the user asked numbered questions and each got a short answer."
"""What the scripted summariser always answers (neither fact is in it)."""


def conversation_model() -> FunctionChatClient:
    """The agent's scripted model: it answers each question, and for every tenth one
    (2, 12, 22, ...) calls `lookup` first."""

    def answer(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage | str:
        last = messages[-1]
        if last.role is Role.TOOL:
            return "I looked it up; the records are above."
        words = last.text.split()
        number = int(words[1].rstrip(":")) if words[:1] == ["question"] else -1
        if number % 10 == 2:
            return reply("", call("lookup", topic=f"t{number}"))
        return f"answer {number}: noted, with a little detail to make the turn longer."

    return FunctionChatClient(answer)


def summariser() -> FunctionChatClient:
    """A scripted summariser: the same short summary every time."""
    return FunctionChatClient(lambda messages, options: SUMMARY)


@tool(name="lookup", description="Look a topic up in the records.")
def lookup(topic: str) -> str:
    """The records about `topic`; topic t2 holds the vault code."""
    return TOOL_FACT if topic == "t2" else f"records about {topic}: " + "filler " * 40


async def converse(
    agent: AgentLike, turns: int = 300, *, pin: bool = True, session: AgentSession | None = None
) -> AgentSession:
    """`turns` turns: the user states FACT in the second (pinned when `pin`), the third
    has the model look up TOOL_FACT (its result then pinned when `pin`), then questions."""
    session = session if session is not None else agent.create_session()
    for turn in range(turns):
        if turn == 1:
            await agent.run(ChatMessage.user(FACT, pinned=pin), session=session)
            continue
        await agent.run(f"question {turn}: please tell me about topic {turn}", session=session)
        if turn == 2 and pin:
            for message in session.messages:
                if any(r.as_text() == TOOL_FACT for r in message.function_results):
                    message.pinned = True
    return session


def seen_text(messages: Sequence[ChatMessage]) -> str:
    """Everything a model request holds as text: messages and tool results."""
    parts: list[str] = []
    for message in messages:
        parts.append(message.text)
        parts.extend(r.as_text() for r in message.function_results)
    return "\n".join(parts)
