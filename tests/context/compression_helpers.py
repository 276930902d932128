"""Histories for compression tests: user turns, answers, and tool-call groups."""

from __future__ import annotations

from raf.core.contents import FunctionCallContent, FunctionResultContent
from raf.core.messages import ChatMessage, Role


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
