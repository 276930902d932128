"""Sequential orchestration: order of speakers and what each is handed."""

from __future__ import annotations

import pytest

from raf import FinishReason
from raf.core.errors import ConfigurationError
from raf.orchestrations import EventKind, SequentialOrchestration

from .helpers import member, texts


async def test_each_member_gets_the_previous_answer():
    writer, w = member("writer", "draft: cats are nice")
    editor, e = member("editor", "edited: Cats are nice.")
    result = await SequentialOrchestration([writer, editor]).run("write about cats")
    assert result.speakers == ["writer", "editor"]
    assert result.text == "edited: Cats are nice."
    assert texts(w) == [("user", None, "write about cats")]
    assert texts(e) == [("user", None, "draft: cats are nice")]
    assert result.finish_reason is FinishReason.STOP


async def test_conversation_mode_hands_on_every_answer_with_its_author():
    a, _ = member("a", "one")
    b, _ = member("b", "two")
    c, cc = member("c", "three")
    orch = SequentialOrchestration([a, b, c], pass_on="conversation")
    result = await orch.run("count")
    assert result.speakers == ["a", "b", "c"]
    assert texts(cc) == [
        ("user", None, "count"),
        ("assistant", "a", "one"),
        ("assistant", "b", "two"),
    ]


async def test_stream_tells_who_speaks_in_order():
    a, _ = member("a", "alpha")
    b, _ = member("b", "beta")
    events = [e async for e in SequentialOrchestration([a, b]).run_stream("go")]
    started = [(e.member, e.messages[-1].text) for e in events if e.kind is EventKind.TURN_STARTED]
    assert started == [("a", "go"), ("b", "alpha")]
    streamed = "".join(
        e.update.text for e in events if e.kind is EventKind.UPDATE and e.update and e.member == "b"
    )
    assert streamed == "beta"
    assert events[-1].kind is EventKind.COMPLETED
    assert events[-1].result is not None and events[-1].result.text == "beta"


async def test_as_agent_keeps_the_conversation_in_its_session():
    a, ac = member("a", "A1", "A2")
    b, _ = member("b", "B1", "B2")
    agent = SequentialOrchestration([a, b], name="chain").as_agent()
    session = agent.create_session()
    first = await agent.run("hello", session=session)
    assert (first.text, first.session_id) == ("B1", session.id)
    assert [m.author_name for m in first.messages] == ["a", "b"]
    await agent.run("again", session=session)
    # the second run hands the first member the whole conversation
    assert texts(ac) == [
        ("user", None, "hello"),
        ("assistant", "a", "A1"),
        ("assistant", "b", "B1"),
        ("user", None, "again"),
    ]
    assert [m.text for m in session.messages] == ["hello", "A1", "B1", "again", "A2", "B2"]


async def test_as_agent_streams_and_folds_to_the_same_answer():
    from raf.core.responses import fold_stream

    a, _ = member("a", "first answer")
    b, _ = member("b", "second answer")
    agent = SequentialOrchestration([a, b]).as_agent()
    folded = await fold_stream(agent.run_stream("go"))
    assert [m.text for m in folded.messages] == ["first answer", "second answer"]
    assert folded.finish_reason is FinishReason.STOP
    assert folded.text == "second answer"


def test_bad_options_are_refused():
    a, _ = member("a")
    with pytest.raises(ConfigurationError, match="pass_on must be one of"):
        SequentialOrchestration([a], pass_on="everything")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="two members are named 'a'"):
        SequentialOrchestration([a, a])
    with pytest.raises(ConfigurationError, match="needs a member"):
        SequentialOrchestration([])
