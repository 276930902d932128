"""Handoff orchestration: triage hands to a specialist by tool or by routing field."""

from __future__ import annotations

import pytest

from raf.core.errors import ConfigurationError
from raf.orchestrations import HandoffOrchestration
from raf.testing import call, reply

from .helpers import member, texts


async def test_triage_hands_off_by_tool_and_the_specialist_answers():
    triage, tc = member("triage", reply("", call("handoff_to_billing", reason="refund")))
    billing, bc = member("billing", "Your refund is on its way.", description="Money matters")
    tech, xc = member("tech", description="Technical problems")
    result = await HandoffOrchestration(triage, [billing, tech]).run("I want a refund")
    assert tc.requests[0].tool_names == ["handoff_to_billing", "handoff_to_tech"]
    assert "Money matters" in tc.requests[0].tools[0].description
    assert result.speakers == ["triage", "billing"]
    assert result.text == "Your refund is on its way."
    # the triage said nothing before handing off: the specialist gets the conversation
    assert texts(bc) == [("user", None, "I want a refund")]
    assert xc.requests == []
    assert result.details["path"] == ["triage", "billing"]
    # the specialist may hand to nobody by default: it gets no handoff tools
    assert bc.requests[0].tool_names == []


async def test_triage_that_answers_itself_ends_the_run():
    triage, _ = member("triage", "Opening hours are 9 to 5.")
    billing, bc = member("billing")
    result = await HandoffOrchestration(triage, [billing]).run("when are you open?")
    assert result.speakers == ["triage"]
    assert bc.requests == []


async def test_routing_field_routes_without_tools():
    triage, tc = member("triage", '{"route": "Tech", "why": "a crash"}')
    tech, _ = member("tech", "Reinstall it.")
    billing, _ = member("billing")
    orch = HandoffOrchestration(triage, [billing, tech], routing_field="route")
    result = await orch.run("it crashes")
    assert tc.requests[0].tool_names == []
    assert result.speakers == ["triage", "tech"]
    system = tc.requests[0].system
    assert '{"route": "<member name>"}' in system and "billing; tech" in system


async def test_specialists_hand_back_within_the_routes_and_max_handoffs_stops_a_loop():
    triage, _ = member("triage", *['{"to": "tech"}'] * 3)
    tech, _ = member("tech", *['{"to": "triage"}'] * 3)
    orch = HandoffOrchestration(
        triage,
        [tech],
        routing_field="to",
        handoffs={"triage": ["tech"], "tech": ["triage"]},
        max_handoffs=3,
    )
    result = await orch.run("loop")
    assert result.speakers == ["triage", "tech", "triage", "tech"]


async def test_a_route_outside_the_allowed_ones_is_not_taken():
    triage, _ = member("triage", '{"route": "nobody"}')
    billing, bc = member("billing")
    result = await HandoffOrchestration(triage, [billing], routing_field="route").run("x")
    assert result.speakers == ["triage"] and bc.requests == []


def test_bad_handoff_map_is_refused():
    triage, _ = member("triage")
    billing, _ = member("billing")
    with pytest.raises(ConfigurationError, match="no member is named 'sales'"):
        HandoffOrchestration(triage, [billing], handoffs={"triage": ["sales"]})


async def test_a_handoff_asks_the_triage_model_once():
    """After the triage model calls the handoff tool, its model is not asked again: one
    call for the triage, one for the specialist."""
    triage, tc = member(
        "triage",
        reply("Let me pass you to billing.", call("handoff_to_billing", reason="refund")),
        "(an extra answer the triage model must never be asked for)",
    )
    billing, bc = member("billing", "Your refund is on its way.")
    result = await HandoffOrchestration(triage, [billing]).run("I want a refund")
    assert len(tc.requests) == 1
    assert len(bc.requests) == 1
    assert tc.remaining == 1
    assert result.speakers == ["triage", "billing"]
    assert result.text == "Your refund is on its way."
    # what the triage said before handing off reaches the specialist
    assert texts(bc) == [
        ("user", None, "I want a refund"),
        ("assistant", "triage", "Let me pass you to billing."),
    ]


async def test_a_failed_handoff_call_lets_the_model_answer():
    """A handoff tool call that fails (an unknown target is no handoff) does not end the
    run: the model reads the error and answers."""
    triage, tc = member("triage", reply("", call("handoff_to_nobody")), "I can answer that myself.")
    billing, bc = member("billing")
    result = await HandoffOrchestration(triage, [billing]).run("hi")
    assert len(tc.requests) == 2
    assert bc.requests == []
    assert result.text == "I can answer that myself."
