"""The original framework's orchestration spellings run as it means them: `passOutput`,
camelCase selectors, and a pipeline's `maxIterations` / `loopFromPhase` with unnamed
phases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from raf.core.errors import ValidationProblems
from raf.decl import DeclAgentBuilder
from raf.orchestrations import (
    GroupChatOrchestration,
    PipelineOrchestration,
    SequentialOrchestration,
)
from raf.testing import ScriptedChatClient

DATA = Path(__file__).resolve().parents[1] / "data" / "dialects" / "original" / "orchestrations"


def _build(path: Path | str, **clients: ScriptedChatClient):
    builder = (
        DeclAgentBuilder().from_file(path)
        if isinstance(path, Path)
        else DeclAgentBuilder().from_yaml_str(path)
    )
    for name, client in clients.items():
        builder.with_connection(name, client=client)
    return builder.build()


def _last(client: ScriptedChatClient, index: int = -1) -> str:
    return client.requests[index].messages[-1].text


async def test_the_coding_agent_pipeline_loops_from_its_second_phase():
    clients = {
        "planner": ScriptedChatClient(["1. edit a.py"]),
        "explorer": ScriptedChatClient(["a.py is in src/"]),
        "coder-alpha": ScriptedChatClient(["alpha v1", "alpha v2", "alpha v3"]),
        "coder-beta": ScriptedChatClient(["beta v1", "beta v2", "beta v3"]),
        "reviewer": ScriptedChatClient(["fix the name", "fix the test", "still not done"]),
    }
    agent = _build(DATA / "coding_agent.yaml", **clients)
    orch = agent.orchestration
    assert isinstance(orch, PipelineOrchestration)
    assert [p.name for p in orch.phases] == ["phase-1", "phase-2", "phase-3"]
    assert (orch.loop_from, orch.max_iterations) == ("phase-2", 3)
    response = await agent.run("rename the helper")
    # the planning phase ran once; coding and review ran maxIterations times in all
    assert len(clients["planner"].requests) == 1
    assert len(clients["coder-alpha"].requests) == 3
    assert len(clients["reviewer"].requests) == 3
    assert response.text == "still not done"
    # passOutput: true inside the first phase: the explorer is given the plan
    assert _last(clients["explorer"]) == "1. edit a.py"
    # each round of coding gets the review of the round before as its feedback
    assert _last(clients["coder-alpha"], 0) == "a.py is in src/"
    assert _last(clients["coder-alpha"], 1) == "fix the name"
    assert _last(clients["coder-beta"], 2) == "fix the test"
    assert clients["coder-alpha"].requests[1].messages[-2].text == "a.py is in src/"


async def test_a_pipeline_loop_ends_early_when_the_answer_meets_until():
    text = (
        (DATA / "coding_agent.yaml")
        .read_text()
        .replace("    maxIterations: 3\n", "    maxIterations: 3\n    until: APPROVED\n")
    )
    clients = {
        "planner": ScriptedChatClient(["plan"]),
        "explorer": ScriptedChatClient(["files"]),
        "coder-alpha": ScriptedChatClient(["a1", "a2"]),
        "coder-beta": ScriptedChatClient(["b1", "b2"]),
        "reviewer": ScriptedChatClient(["fix it", "Approved."]),
    }
    response = await _build(text, **clients).run("go")
    assert response.text == "Approved."
    assert len(clients["reviewer"].requests) == 2


@pytest.mark.parametrize(("start", "named"), [("0", "phase-1"), ("phase-3", "phase-3")])
def test_loop_from_phase_is_a_place_from_zero_or_a_name(start, named):
    text = (
        (DATA / "coding_agent.yaml")
        .read_text()
        .replace("loopFromPhase: 1", f"loopFromPhase: {start}")
    )
    names = ("planner", "explorer", "coder-alpha", "coder-beta", "reviewer")
    agent = _build(text, **{n: ScriptedChatClient([]) for n in names})
    assert agent.orchestration.loop_from == named


def test_a_loop_from_phase_outside_the_pipeline_is_located():
    text = (DATA / "coding_agent.yaml").read_text().replace("loopFromPhase: 1", "loopFromPhase: 7")
    with pytest.raises(ValidationProblems) as caught:
        DeclAgentBuilder().from_yaml_str(text)
    (problem,) = caught.value.problems
    assert (problem.line, problem.key_path) == (9, "metadata.orchestration.loopFrom")
    assert "'7' is no phase" in problem.message and "phase-1" in problem.message


def test_max_iterations_is_bounded():
    text = (DATA / "coding_agent.yaml").read_text().replace("maxIterations: 3", "maxIterations: 0")
    with pytest.raises(ValidationProblems) as caught:
        DeclAgentBuilder().from_yaml_str(text)
    (problem,) = caught.value.problems
    assert (problem.line, problem.key_path) == (8, "metadata.orchestration.maxIterations")


async def test_round_robin_selector_in_camel_case_takes_turns():
    clients = {n: ScriptedChatClient([f"{n} says"]) for n in ("opener", "middle", "closer")}
    agent = _build(DATA / "writers_room.yaml", **clients)
    orch = agent.orchestration
    assert isinstance(orch, GroupChatOrchestration)
    response = await agent.run("a story about a lighthouse")
    assert response.text == "closer says"
    assert [len(c.requests) for c in clients.values()] == [1, 1, 1]


@pytest.mark.parametrize("selector", ["RoundRobin", "round-robin", "roundrobin"])
def test_other_spellings_of_round_robin(selector):
    text = (DATA / "writers_room.yaml").read_text().replace("roundRobin", selector)
    clients = {n: ScriptedChatClient([]) for n in ("opener", "middle", "closer")}
    assert isinstance(_build(text, **clients).orchestration, GroupChatOrchestration)


async def test_pass_output_false_gives_each_agent_the_task_alone():
    clients = {"first": ScriptedChatClient(["one"]), "second": ScriptedChatClient(["two"])}
    agent = _build(DATA / "relay.yaml", **clients)
    assert isinstance(agent.orchestration, SequentialOrchestration)
    assert agent.orchestration.pass_on == "task"
    assert (await agent.run("count")).text == "two"
    assert _last(clients["second"]) == "count"


async def test_pass_output_true_feeds_the_answer_on():
    text = (DATA / "relay.yaml").read_text().replace("passOutput: false", "passOutput: true")
    clients = {"first": ScriptedChatClient(["one"]), "second": ScriptedChatClient(["two"])}
    await _build(text, **clients).run("count")
    assert _last(clients["second"]) == "one"


async def test_a_pipeline_with_pass_output_false_gives_each_phase_the_task():
    text = (
        "name: p\nmetadata:\n  orchestration:\n    mode: pipeline\n    passOutput: false\n"
        "    phases:\n      - agents: [a]\n      - agents: [b]\nsubAgents:\n"
        "  - {name: a, instructions: a, model: {connection: {kind: reference, name: a}}}\n"
        "  - {name: b, instructions: b, model: {connection: {kind: reference, name: b}}}\n"
    )
    clients = {"a": ScriptedChatClient(["from a"]), "b": ScriptedChatClient(["from b"])}
    await _build(text, **clients).run("the task")
    assert _last(clients["b"]) == "the task"


# -- raf convert, both directions ------------------------------------------------------


def _orchestration(data: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = data["metadata"]["orchestration"]
    return found


def test_convert_to_raf_writes_the_pipeline_in_rafs_spelling():
    from raf.decl.convert import convert, read_as_raf

    data, _ = read_as_raf(DATA / "coding_agent.yaml")
    orchestration = _orchestration(convert(data, "raf"))
    assert orchestration["loopFrom"] == "phase-2" and orchestration["maxIterations"] == 3
    first = orchestration["phases"][0]
    assert first == {
        "mode": "sequential",
        "members": ["planner", "explorer"],
        "passOn": "output",
        "name": "phase-1",
    }


@pytest.mark.parametrize("name", ["coding_agent.yaml", "writers_room.yaml", "relay.yaml"])
def test_convert_to_original_and_back_is_the_same_document(tmp_path, name):
    import yaml

    from raf.cli.main import main
    from raf.decl.convert import read_as_raf

    original = tmp_path / "original.yaml"
    assert main(["convert", str(DATA / name), "--to", "original", "-o", str(original)]) == 0
    written = yaml.safe_load(original.read_text())
    source = yaml.safe_load((DATA / name).read_text())
    # the original framework's own spelling comes back as it was written
    assert _orchestration(written) == _orchestration(source)
    again, _ = read_as_raf(original)
    first, _ = read_as_raf(DATA / name)
    assert again == first


@pytest.mark.parametrize("name", ["coding_agent.yaml", "writers_room.yaml"])
def test_convert_through_maf_keeps_the_orchestration(tmp_path, name):
    from raf.decl.convert import convert, dump, read_as_raf

    first, _ = read_as_raf(DATA / name)
    maf = tmp_path / "maf.yaml"
    maf.write_text(dump(convert(first, "maf"), "yaml"), encoding="utf-8")
    again, _ = read_as_raf(maf)
    assert _orchestration(again) == _orchestration(first)


def test_a_setting_the_original_has_no_word_for_stays_in_rafs_spelling():
    from raf.decl.documents.orchestration import in_original_spelling

    sequential = in_original_spelling({"mode": "sequential", "passOn": "conversation"})
    assert sequential == {"mode": "sequential", "passOn": "conversation"}
    pipeline = in_original_spelling({"mode": "pipeline", "until": "DONE", "phases": []})
    assert pipeline["until"] == "DONE"


def test_pass_output_on_a_mode_without_a_previous_answer_has_no_effect():
    """The original reads `passOutput` in any mode and uses it in a sequential one only:
    in a group chat it loads, with a located warning that it has no effect."""
    from raf.decl.documents.loader import load

    text = (
        (DATA / "writers_room.yaml")
        .read_text()
        .replace("    maxRounds: 3\n", "    maxRounds: 3\n    passOutput: true\n")
    )
    result = load(text)
    [warning] = [w for w in result.warnings if w.key_path == "metadata.orchestration.passOutput"]
    assert warning.line == 9
    assert "a group_chat orchestration has none, so it has no effect" in warning.message
