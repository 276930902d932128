"""Pipeline: phases in order, sequential and concurrent, loop back with a limit."""

from __future__ import annotations

import pytest

from raf.core.errors import ConfigurationError
from raf.orchestrations import LoopBack, Phase, PipelineOrchestration

from .helpers import member, texts


async def test_phases_hand_their_answer_on():
    planner, _ = member("planner", "plan: two topics")
    r1, r1c = member("r1", "fact one")
    r2, _ = member("r2", "fact two")
    writer, wc = member("writer", "the report")
    orch = PipelineOrchestration(
        [
            Phase(name="plan", members=[planner]),
            Phase(name="research", members=[r1, r2], mode="concurrent"),
            Phase(name="write", members=[writer]),
        ]
    )
    result = await orch.run("report on x")
    assert result.speakers == ["planner", "r1", "r2", "writer"]
    assert texts(r1c) == [("user", None, "plan: two topics")]
    assert texts(wc) == [("user", None, "[r1]\nfact one\n\n[r2]\nfact two")]
    assert result.text == "the report"
    assert result.details["phases"] == ["plan", "research", "write"]


async def test_a_phase_loops_back_with_its_feedback_until_the_limit():
    writer, wc = member("writer", "draft 1", "draft 2", "draft 3")
    critic, _ = member("critic", "REVISE: shorter", "revise again", "REVISE once more")
    orch = PipelineOrchestration(
        [
            Phase(name="write", members=[writer]),
            Phase(
                name="review",
                members=[critic],
                loop_back=LoopBack(to="write", when="revise", max_loops=2),
            ),
        ]
    )
    result = await orch.run("a poem")
    assert result.details["phases"] == ["write", "review"] * 3
    assert texts(wc, 1) == [("user", None, "a poem"), ("user", None, "REVISE: shorter")]
    assert result.text == "REVISE once more"


async def test_loop_back_with_a_test_function():
    a, _ = member("a", "1", "2")
    orch = PipelineOrchestration(
        [Phase(name="p", members=[a], loop_back=LoopBack(to="p", when=lambda t: t == "1"))]
    )
    assert (await orch.run("go")).speakers == ["a", "a"]


def test_bad_pipelines_are_refused():
    a, _ = member("a")
    with pytest.raises(ConfigurationError, match="not this or an earlier phase"):
        PipelineOrchestration([Phase(name="p", members=[a], loop_back=LoopBack(to="q", when="x"))])
    with pytest.raises(ConfigurationError, match="has no member"):
        PipelineOrchestration([Phase(name="p", members=[])])
    with pytest.raises(ConfigurationError, match="two phases are named"):
        PipelineOrchestration([Phase(name="p", members=[a]), Phase(name="p", members=[a])])
    with pytest.raises(ConfigurationError, match="loops from 'q', which is no phase"):
        PipelineOrchestration([Phase(name="p", members=[a])], loop_from="q")
    with pytest.raises(ConfigurationError, match="max_iterations must be at least 1"):
        PipelineOrchestration([Phase(name="p", members=[a])], loop_from="p", max_iterations=0)


async def test_the_pipeline_repeats_from_a_phase_up_to_max_iterations():
    plan, pc = member("plan", "the plan")
    code, cc = member("code", "v1", "v2", "v3")
    review, _ = member("review", "redo", "redo again", "still bad")
    orch = PipelineOrchestration(
        [
            Phase(name="plan", members=[plan]),
            Phase(name="code", members=[code]),
            Phase(name="review", members=[review]),
        ],
        loop_from="code",
        max_iterations=3,
    )
    result = await orch.run("a feature")
    assert result.details["phases"] == ["plan", "code", "review"] + ["code", "review"] * 2
    assert result.details["iterations"] == 3 and len(pc.requests) == 1
    # each round is given the first round's input and the last answer as feedback
    assert texts(cc, 2) == [("user", None, "the plan"), ("user", None, "redo again")]
    assert result.text == "still bad"


async def test_until_ends_the_repetition_early():
    code, _ = member("code", "v1", "v2")
    review, _ = member("review", "redo", "APPROVED")
    orch = PipelineOrchestration(
        [Phase(name="code", members=[code]), Phase(name="review", members=[review])],
        loop_from="code",
        max_iterations=5,
        until=lambda text: text == "APPROVED",
    )
    result = await orch.run("go")
    assert result.details["iterations"] == 2 and result.text == "APPROVED"


async def test_pass_on_task_gives_each_phase_and_member_the_task():
    a, _ = member("a", "from a")
    b, bc = member("b", "from b")
    c, cc = member("c", "from c")
    orch = PipelineOrchestration(
        [Phase(name="one", members=[a, b], pass_on="task"), Phase(name="two", members=[c])],
        pass_on="task",
    )
    await orch.run("the task")
    assert texts(bc) == [("user", None, "the task")]
    assert texts(cc) == [("user", None, "the task")]
