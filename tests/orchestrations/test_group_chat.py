"""Group chat: selectors, max rounds, termination keywords, the coordinator."""

from __future__ import annotations

import pytest

from raf.core.errors import ConfigurationError
from raf.orchestrations import GroupChatOrchestration, OrchestrationError

from .helpers import member, texts


async def test_round_robin_until_max_rounds_everyone_sees_everything():
    writer, _ = member("writer", "v1", "v2")
    critic, cc = member("critic", "too short", "better")
    orch = GroupChatOrchestration([writer, critic], max_rounds=3)
    result = await orch.run("a haiku")
    assert result.speakers == ["writer", "critic", "writer"]
    assert result.text == "v2"
    assert texts(cc, 0) == [("user", None, "a haiku"), ("assistant", "writer", "v1")]
    assert result.details == {"rounds": 3, "stopped": "max_rounds"}


async def test_termination_keyword_ends_the_chat_in_any_case():
    writer, _ = member("writer", "v1", "v2")
    critic, _ = member("critic", "no", "Approved, ship it")
    orch = GroupChatOrchestration([writer, critic], termination_keywords=["APPROVED"])
    result = await orch.run("go")
    assert result.speakers == ["writer", "critic", "writer", "critic"]
    assert result.details["stopped"] == "keyword"


async def test_fixed_order_cycles_through_the_names_given():
    a, _ = member("a", "a1", "a2", "a3")
    b, _ = member("b", "b1")
    orch = GroupChatOrchestration([a, b], selector="fixed", order=["a", "a", "b"], max_rounds=4)
    result = await orch.run("go")
    assert result.speakers == ["a", "a", "b", "a"]


async def test_the_coordinator_picks_speakers_and_ends_with_done():
    writer, _ = member("writer", "draft", "final draft")
    critic, _ = member("critic", "fine", description="criticises")
    boss, bc = member("boss", "writer", "Critic.", '{"next": "writer"}', "DONE")
    orch = GroupChatOrchestration([writer, critic], selector=boss, max_rounds=5)
    result = await orch.run("write")
    assert result.speakers == ["writer", "critic", "writer"]
    assert result.details == {"rounds": 3, "stopped": "coordinator"}
    roster = texts(bc, 0)[-1][2]
    assert "- writer: a member" in roster and "- critic: criticises" in roster
    # the coordinator sees the chat so far; its own choices are not part of it
    assert [t[1] for t in texts(bc, 2)][:-1] == [None, "writer", "critic"]


async def test_a_coordinator_naming_no_member_is_a_clear_error():
    a, _ = member("a")
    boss, _ = member("boss", "the tall one")
    with pytest.raises(OrchestrationError, match="names no member"):
        await GroupChatOrchestration([a], selector=boss).run("go")


async def test_a_long_coordinator_answer_is_quoted_short():
    a, _ = member("a")
    boss, _ = member("boss", "Tide pools are magical. " * 80)
    with pytest.raises(OrchestrationError, match="names no member") as caught:
        await GroupChatOrchestration([a], selector=boss).run("go")
    assert len(str(caught.value)) < 400 and "follows this format" in str(caught.value)


def test_bad_options_are_refused():
    a, _ = member("a")
    with pytest.raises(ConfigurationError, match="needs 'order'"):
        GroupChatOrchestration([a], selector="fixed")
    with pytest.raises(ConfigurationError, match="'order' names 'b'"):
        GroupChatOrchestration([a], selector="fixed", order=["b"])
    with pytest.raises(ConfigurationError, match="selector must be"):
        GroupChatOrchestration([a], selector="random")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="max_rounds"):
        GroupChatOrchestration([a], max_rounds=0)
