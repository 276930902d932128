"""Magentic: plan, ledger each iteration, the named member acts, re-plan on stalls."""

from __future__ import annotations

import json

import pytest

from raf.orchestrations import MagenticOrchestration, OrchestrationError

from .helpers import member, texts


def ledger(done=False, progress=True, loop=False, who="researcher", do="look it up"):
    return json.dumps(
        {
            "is_request_satisfied": {"answer": done, "reason": ""},
            "is_progress_being_made": {"answer": progress, "reason": ""},
            "is_in_loop": {"answer": loop, "reason": ""},
            "next_speaker": {"answer": who, "reason": ""},
            "instruction_or_question": {"answer": do, "reason": ""},
        }
    )


async def test_plan_ledger_act_then_the_manager_answers():
    manager, mc = member(
        "manager",
        "facts and plan",
        ledger(who="researcher", do="find the year"),
        ledger(who="coder", do="compute the age"),
        ledger(done=True),
        "Final: 42",
    )
    researcher, rc = member("researcher", "1982", description="searches")
    coder, cc = member("coder", "42", description="computes")
    orch = MagenticOrchestration(manager, [researcher, coder])
    result = await orch.run("how old?")
    assert result.speakers == ["researcher", "coder", "manager"]
    assert result.text == "Final: 42"
    assert texts(rc) == [("user", None, "how old?"), ("user", None, "find the year")]
    assert texts(cc)[-2:] == [
        ("assistant", "researcher", "1982"),
        ("user", None, "compute the age"),
    ]
    assert "- coder: computes" in texts(mc, 0)[-1][2]
    assert "Plan:\nfacts and plan" in texts(mc, 1)[-1][2]
    assert [e["next_speaker"]["answer"] for e in result.details["ledger"]] == [
        "researcher",
        "coder",
        "researcher",
    ]
    assert result.details["stopped"] == "satisfied"


async def test_stalls_make_the_manager_replan():
    manager, mc = member(
        "manager",
        "plan A",
        ledger(progress=False),
        ledger(loop=True),
        "plan B",
        ledger(done=True),
        "done",
    )
    researcher, _ = member("researcher", "nothing", "still nothing")
    orch = MagenticOrchestration(manager, [researcher], max_stalls=1)
    result = await orch.run("task")
    assert result.details["plans"] == ["plan A", "plan B"]
    assert "The plan was:\nplan A" in texts(mc, 3)[-1][2]
    assert "Plan:\nplan B" in texts(mc, 4)[-1][2]
    assert result.speakers == ["researcher", "manager"]


async def test_max_iterations_ends_with_the_managers_answer():
    manager, mc = member("manager", "plan", ledger(), ledger(), "best effort")
    researcher, _ = member("researcher", "a", "b")
    result = await MagenticOrchestration(manager, [researcher], max_iterations=2).run("t")
    assert result.details["stopped"] == "max_iterations"
    assert "limit of 2 iterations" in texts(mc)[-1][2]
    assert result.text == "best effort"


async def test_an_unreadable_ledger_is_asked_again_then_an_error():
    manager, _ = member("manager", "plan", "not json", ledger(done=True), "ok")
    researcher, _ = member("researcher")
    assert (await MagenticOrchestration(manager, [researcher]).run("t")).text == "ok"
    manager, _ = member("manager", "plan", "no", "still no")
    with pytest.raises(OrchestrationError, match="no readable progress ledger"):
        await MagenticOrchestration(manager, [researcher]).run("t")


async def test_naming_no_member_is_an_error():
    manager, _ = member("manager", "plan", ledger(who="ghost"))
    researcher, _ = member("researcher")
    with pytest.raises(OrchestrationError, match="'ghost' as next speaker"):
        await MagenticOrchestration(manager, [researcher]).run("t")
