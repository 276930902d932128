"""Vote: majority, unanimous, weighted, and rounds that show the last ballots."""

from __future__ import annotations

import pytest

from raf.core.errors import ConfigurationError
from raf.orchestrations import VoteOrchestration

from .helpers import member, texts


async def test_majority_decides_in_one_round():
    a, ac = member("a", '{"vote": "Yes", "reason": "cheap"}')
    b, _ = member("b", "vote: no")
    c, _ = member("c", '```json\n{"vote": "yes"}\n```')
    orch = VoteOrchestration([a, b, c], choices=["yes", "no"])
    result = await orch.run("ship it?")
    assert result.text == "yes"
    assert result.speakers == ["a", "b", "c", "vote"]
    assert result.details["tally"] == {"yes": 2.0, "no": 1.0}
    assert "Choices: yes, no." in texts(ac)[-1][2]
    assert texts(ac)[0] == ("user", None, "ship it?")


async def test_unanimous_needs_a_second_round_that_shows_the_first():
    a, ac = member("a", '{"vote": "yes", "reason": "r1"}', '{"vote": "yes"}')
    b, _ = member("b", '{"vote": "no", "reason": "too risky"}', '{"vote": "yes"}')
    orch = VoteOrchestration([a, b], method="unanimous", rounds=3)
    result = await orch.run("ship it?")
    assert result.details["rounds"] == 2 and result.text == "yes"
    second = texts(ac, 1)[-1][2]
    assert "No decision was reached in round 1" in second
    assert "- b: no (too risky)" in second
    assert result.speakers == ["a", "b", "a", "b", "vote"]


async def test_weighted_vote_and_no_decision_after_the_last_round():
    a, _ = member("a", "vote: red", "vote: red")
    b, _ = member("b", "vote: blue", "vote: blue")
    c, _ = member("c", "vote: blue", "vote: blue")
    weighted = VoteOrchestration([a, b, c], method="weighted", weights={"a": 3})
    assert (await weighted.run("colour?")).text == "red"
    tied = VoteOrchestration([a, b], rounds=1)
    result = await tied.run("colour?")
    assert result.details["decision"] is None
    assert result.text == "No decision after 1 round(s): red: 1, blue: 1"


async def test_a_vote_outside_the_choices_counts_as_none():
    a, _ = member("a", "vote: maybe")
    b, _ = member("b", "vote: yes")
    result = await VoteOrchestration([a, b], choices=["yes", "no"]).run("?")
    assert result.details["ballots"][0][0] == {"voter": "a", "vote": None, "reason": ""}
    assert result.details["decision"] is None


def test_bad_options_are_refused():
    a, _ = member("a")
    with pytest.raises(ConfigurationError, match="method must be one of"):
        VoteOrchestration([a], method="plurality")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="'weights' names 'z'"):
        VoteOrchestration([a], method="weighted", weights={"z": 1})
    with pytest.raises(ConfigurationError, match="only for the 'weighted' method"):
        VoteOrchestration([a], weights={"a": 2})
