"""A message is built the same way whichever constructor made it, and keeps the
dataclass behaviour (fields, replace, equality, repr, pickling) its users rely on."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import threading

import pytest

from raf import (
    ApprovalRequestContent,
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    Role,
    TextContent,
)
from raf.core.messages import new_id


def test_the_role_may_be_a_plain_string_and_becomes_the_role_itself() -> None:
    for role in Role:
        message = ChatMessage(role=role.value)  # type: ignore[arg-type]
        assert message.role is role and type(message.role) is Role


def test_an_unknown_role_names_itself_and_every_known_role() -> None:
    with pytest.raises(ValueError) as caught:
        ChatMessage(role="robot", contents="hi")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "unknown message role 'robot'; use one of system, user, assistant, tool"
    )
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    with pytest.raises(ValueError, match="unknown message role 3;"):
        ChatMessage(role=3)  # type: ignore[arg-type]


def test_text_contents_become_one_text_content() -> None:
    message = ChatMessage(role=Role.USER, contents="hi")  # type: ignore[arg-type]
    assert message.contents == [TextContent(text="hi")]
    assert ChatMessage(role=Role.USER, contents="").contents == [TextContent(text="")]  # type: ignore[arg-type]


def test_strings_in_a_list_become_text_contents_in_a_new_list() -> None:
    reasoning = ReasoningContent(text="hmm")
    given: list[object] = ["a", reasoning, "b"]
    message = ChatMessage(role=Role.ASSISTANT, contents=given)  # type: ignore[arg-type]
    assert message.contents == [TextContent(text="a"), reasoning, TextContent(text="b")]
    assert message.contents is not given and message.contents[1] is reasoning
    assert given == ["a", reasoning, "b"]  # the caller's list is left as it was


def test_a_list_of_contents_is_kept_as_the_same_list() -> None:
    given = [TextContent(text="a")]
    message = ChatMessage(role=Role.USER, contents=given)  # type: ignore[arg-type]
    assert message.contents is given
    empty: list[TextContent] = []
    assert ChatMessage(role=Role.TOOL, contents=empty).contents is empty  # type: ignore[arg-type]


def test_left_out_contents_are_a_fresh_list_per_message() -> None:
    first, second = ChatMessage(role=Role.USER), ChatMessage(role=Role.USER)
    assert first.contents == [] and first.contents is not second.contents
    first.contents.append(TextContent(text="x"))
    assert second.contents == []


def test_arguments_are_keywords_only() -> None:
    with pytest.raises(TypeError, match="positional"):
        ChatMessage(Role.USER)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'text'"):
        ChatMessage(role=Role.USER, text="hi")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'role'"):
        ChatMessage()  # type: ignore[call-arg]
    assert list(inspect.signature(ChatMessage).parameters) == [
        "role",
        "contents",
        "author_name",
        "message_id",
        "pinned",
    ]


def test_the_shortcuts_make_what_the_constructor_makes() -> None:
    call = FunctionCallContent(call_id="c1", name="add")
    assert ChatMessage.user("hi") == ChatMessage(role=Role.USER, contents=[TextContent(text="hi")])
    assert ChatMessage.system("be brief") == ChatMessage(
        role=Role.SYSTEM, contents=[TextContent(text="be brief")]
    )
    assert ChatMessage.assistant("ok", calls=[call]) == ChatMessage(
        role=Role.ASSISTANT, contents=[TextContent(text="ok"), call]
    )
    assert ChatMessage.assistant().contents == []
    made = ChatMessage.user("hi")
    assert type(made) is ChatMessage and type(made.contents[0]) is TextContent
    assert made.author_name is None and made.message_id is None
    assert made.contents[0].type == "text"


def test_the_shortcuts_of_a_subclass_go_through_its_constructor() -> None:
    seen: list[str] = []

    @dataclasses.dataclass(kw_only=True, slots=True, init=False)
    class Stamped(ChatMessage):
        def __init__(self, **kwargs: object) -> None:
            seen.append("init")
            ChatMessage.__init__(self, **kwargs)  # type: ignore[arg-type]

    for made in (Stamped.user("a"), Stamped.system("b"), Stamped.assistant("c")):
        assert type(made) is Stamped
    assert seen == ["init", "init", "init"]


def test_a_message_keeps_its_dataclass_behaviour() -> None:
    message = ChatMessage(role=Role.ASSISTANT, contents="hi", author_name="bot", message_id="m1")  # type: ignore[arg-type]
    assert [f.name for f in dataclasses.fields(message)] == [
        "role",
        "contents",
        "author_name",
        "message_id",
        "pinned",
    ]
    assert repr(message) == (
        "ChatMessage(role=<Role.ASSISTANT: 'assistant'>, "
        "contents=[TextContent(text='hi', type='text')], author_name='bot', message_id='m1', "
        "pinned=False)"
    )
    assert pickle.loads(pickle.dumps(message)) == message
    assert copy.deepcopy(message) == message
    renamed = dataclasses.replace(message, role="user")  # type: ignore[arg-type]
    assert renamed.role is Role.USER and renamed.contents == message.contents
    assert message != ChatMessage(role=Role.ASSISTANT, contents="hi")  # type: ignore[arg-type]
    assert not hasattr(message, "__dict__")
    pinned = dataclasses.replace(message, pinned=True)
    assert pinned != message and pickle.loads(pickle.dumps(pinned)).pinned is True


class _Marked(str):
    """A str subclass, as a client might hand over."""


def test_text_joins_the_text_contents_only_and_is_always_a_plain_string() -> None:
    call = FunctionCallContent(call_id="c1", name="add")
    assert ChatMessage(role=Role.USER).text == ""
    assert ChatMessage(role=Role.ASSISTANT, contents=[call]).text == ""
    assert ChatMessage.user("hi").text == "hi"
    mixed = [TextContent(text="a"), call, ReasoningContent(text="hmm"), TextContent(text="b")]
    assert ChatMessage(role=Role.ASSISTANT, contents=mixed).text == "ab"  # type: ignore[arg-type]
    marked = ChatMessage(role=Role.USER, contents=[TextContent(text=_Marked("m"))]).text
    assert marked == "m" and type(marked) is str


def test_the_readers_pick_their_kind_in_order() -> None:
    first, second = (FunctionCallContent(call_id=c, name="f") for c in ("c1", "c2"))
    result = FunctionResultContent(call_id="c1", result=1)
    request = ApprovalRequestContent(call_id="c3", name="rm")
    message = ChatMessage(
        role=Role.ASSISTANT,
        contents=[first, TextContent(text="x"), result, second, request],
    )
    assert message.function_calls == [first, second]
    assert message.function_calls[0] is first
    assert message.function_results == [result]
    assert message.approval_requests == [request]
    assert message.function_calls is not message.function_calls  # a new list each time
    empty = ChatMessage(role=Role.USER)
    assert empty.function_calls == [] and empty.function_results == []
    assert empty.approval_requests == []


def test_new_ids_are_the_prefix_the_process_part_and_a_hex_counter() -> None:
    ids = [new_id("msg") for _ in range(300)]  # past several blocks of ready numbers
    heads = {i.rsplit("_", 1)[0] for i in ids}
    assert heads == {"msg"}
    process = ids[0].split("_")[1][:10]
    assert len(process) == 10 and int(process, 16) >= 0
    counters = [int(i.split("_")[1][10:], 16) for i in ids]
    assert counters == list(range(counters[0], counters[0] + 300))
    assert all(i == f"msg_{process}{n:x}" for i, n in zip(ids, counters, strict=True))
    assert new_id("call").startswith(f"call_{process}")


def test_new_ids_drawn_from_many_threads_are_all_different() -> None:
    drawn: list[list[str]] = [[] for _ in range(6)]

    def draw(into: list[str]) -> None:
        for _ in range(5000):
            into.append(new_id("t"))

    threads = [threading.Thread(target=draw, args=(into,)) for into in drawn]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    every = [i for into in drawn for i in into]
    assert len(every) == 30000 and len(set(every)) == 30000
