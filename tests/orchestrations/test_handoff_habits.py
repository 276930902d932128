"""What the OpenAI Agents SDK's handoffs do, in raf: valid tool names from any member
name, `on_handoff` callbacks, `deps` through the orchestration, the next run starting with
the member that answered last, and the member's own guardrails kept."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from raf import Agent, AgentBuilder, GuardrailResult, InputGuardrailTripped, RunContext
from raf.core.errors import ConfigurationError
from raf.core.sessions import AgentSession
from raf.orchestrations import HandoffOrchestration
from raf.orchestrations.handoff import Handoff, handoff_tool_names
from raf.stores.sessions import SqliteSessionStore
from raf.testing import ScriptedChatClient, call, reply

from .helpers import approve, member


@dataclass
class Airline:
    passenger: str
    seats: dict[str, str]


def test_tool_names_are_valid_and_distinct_whatever_the_member_names() -> None:
    names = handoff_tool_names(["Seat Booking Agent", "FAQ agent!", "faq-agent", "faq agent", "?"])
    assert names == {
        "Seat Booking Agent": "handoff_to_seat_booking_agent",
        "FAQ agent!": "handoff_to_faq_agent",
        "faq-agent": "handoff_to_faq-agent",
        "faq agent": "handoff_to_faq_agent_2",
        "?": "handoff_to_member",
    }
    long = handoff_tool_names(["x" * 80, "x" * 81])
    assert [len(n) for n in long.values()] == [64, 64] and len(set(long.values())) == 2


async def test_a_member_named_with_spaces_is_handed_to_by_its_valid_tool() -> None:
    triage, tc = member("Triage Agent", reply("", call("handoff_to_seat_booking_agent")))
    seats, _ = member("Seat Booking Agent", "Seat 12A is yours.")
    result = await HandoffOrchestration(triage, [seats]).run("change my seat")
    assert tc.requests[0].tool_names == ["handoff_to_seat_booking_agent"]
    assert result.speakers == ["Triage Agent", "Seat Booking Agent"]


async def test_on_handoff_hears_source_target_reason_and_deps() -> None:
    heard: list[Handoff] = []

    async def on_seat_booking(handoff: Handoff) -> None:
        heard.append(handoff)

    triage, _ = member("triage", reply("", call("handoff_to_seats", reason="wants 12A")))
    seats, _ = member("seats", "Done.")
    faq, _ = member("faq")
    deps = Airline(passenger="Ada", seats={})
    orch = HandoffOrchestration(triage, [seats, faq], on_handoff={"seats": on_seat_booking})
    await orch.run("seat please", deps=deps)
    assert heard == [Handoff(source="triage", target="seats", reason="wants 12A", deps=deps)]


def test_on_handoff_for_no_member_or_not_a_function_is_refused() -> None:
    triage, _ = member("triage")
    seats, _ = member("seats")
    with pytest.raises(ConfigurationError, match="on_handoff names 'sets', who is no member"):
        HandoffOrchestration(triage, [seats], on_handoff={"sets": print})
    with pytest.raises(ConfigurationError, match="on_handoff must be a function"):
        HandoffOrchestration(triage, [seats], on_handoff="print")  # type: ignore[arg-type]


async def test_on_handoff_runs_once_when_a_paused_run_resumes() -> None:
    heard: list[str] = []
    triage, _ = member("triage", reply("", call("handoff_to_billing")))
    billing, _ = member(
        "billing", reply("", call("refund", call_id="r1")), "Refunded.", approve="refund"
    )
    orch = HandoffOrchestration(triage, [billing], on_handoff=lambda h: heard.append(h.target))
    paused = await orch.run("refund me")
    assert [p.call_id for p in paused.pending_approvals] == ["r1"] and heard == ["billing"]
    done = await orch.run(session=paused.session, approvals=approve("r1"))
    assert done.text == "Refunded." and heard == ["billing"]


def update_seat(ctx: RunContext[Airline], seat: str) -> str:
    """Move the passenger to another seat."""
    ctx.deps.seats[ctx.deps.passenger] = seat
    return f"{ctx.deps.passenger} is in {seat}"


async def test_deps_reach_the_members_tools_directly_and_as_an_agent() -> None:
    for as_agent in (False, True):
        triage, _ = member("triage", reply("", call("handoff_to_seats")))
        client = ScriptedChatClient([reply("", call("update_seat", seat="12A")), "Moved."])
        seats = Agent(chat_client=client, name="seats", tools=[update_seat], deps_type=Airline)
        deps = Airline(passenger="Ada", seats={})
        orch = HandoffOrchestration(triage, [seats])
        if as_agent:
            response = await orch.as_agent().run("seat 12A", deps=deps)
            assert response.text == "Moved."
        else:
            assert (await orch.run("seat 12A", deps=deps)).text == "Moved."
        assert deps.seats == {"Ada": "12A"}


async def test_the_next_run_goes_on_with_the_member_that_answered_last(tmp_path: Any) -> None:
    triage, tc = member("triage", reply("", call("handoff_to_seats")), "Hello again.")
    seats, sc = member("seats", "Which seat?", "12A it is.")
    store = SqliteSessionStore(str(tmp_path / "sessions.db"))
    agent = HandoffOrchestration(triage, [seats]).as_agent(session_store=store)
    session = agent.create_session()
    assert (await agent.run("change my seat", session=session)).text == "Which seat?"
    # another worker: the session from the store, a fresh agent over fresh members
    loaded = await store.load(session.id)
    again = await agent.run("12A", session=loaded)
    assert again.text == "12A it is."
    assert len(tc.requests) == 1 and len(sc.requests) == 2
    assert [m.text for m in sc.requests[1].messages][-1] == "12A"


async def test_stay_with_last_off_starts_each_run_with_the_triage() -> None:
    triage, tc = member("triage", reply("", call("handoff_to_seats")), "Triage here.")
    seats, _ = member("seats", "Which seat?")
    agent = HandoffOrchestration(triage, [seats], stay_with_last=False).as_agent()
    session = AgentSession()
    await agent.run("change my seat", session=session)
    assert (await agent.run("hello", session=session)).text == "Triage here."
    assert len(tc.requests) == 2


async def test_a_member_s_own_guardrails_hold_inside_the_orchestration() -> None:
    def no_passwords(text: str) -> GuardrailResult:
        if "password" in text:
            return GuardrailResult.trip("mentions a password")
        return GuardrailResult.passed()

    client = ScriptedChatClient([reply("", call("handoff_to_seats"))])
    triage = (
        AgentBuilder("triage").with_chat_client(client).with_input_guardrail(no_passwords).build()
    )
    seats, _ = member("seats", "ok")
    with pytest.raises(InputGuardrailTripped, match="mentions a password"):
        await HandoffOrchestration(triage, [seats]).run("my password is hunter2")
    assert client.requests == []
