"""The original framework runs the document's own agent in a sequential (first), a
concurrent (beside the sub-agents) and a vote (the first voter, a list of weights counting
from it) orchestration; raf does so where the orchestration is written in the original's
spelling, and keeps the sub-agents alone (with a warning) in its own."""

from __future__ import annotations

import json

import pytest

from raf.core.errors import ValidationProblems
from raf.decl import DeclAgentBuilder
from raf.decl.documents.loader import load_file
from raf.orchestrations import (
    ConcurrentOrchestration,
    SequentialOrchestration,
    VoteOrchestration,
)
from raf.testing import ScriptedChatClient


def _doc(orchestration: str, subs: tuple[str, ...] = ("first", "second")) -> str:
    members = "".join(
        f"  - name: {n}\n    instructions: Vote.\n"
        f"    model: {{connection: {{kind: reference, name: {n}}}}}\n"
        for n in subs
    )
    return (
        "kind: prompt\nname: chair\ninstructions: Lead the panel.\n"
        "model: {connection: {kind: reference, name: chair}}\n"
        f"metadata:\n  orchestration:\n{orchestration}subAgents:\n{members}"
    )


def _build(text: str, **clients: ScriptedChatClient):
    builder = DeclAgentBuilder().from_yaml_str(text)
    for name, client in clients.items():
        builder.with_connection(name, client=client)
    return builder.build()


def _ballot(vote: str) -> str:
    return json.dumps({"vote": vote, "reason": "so"})


async def test_an_original_vote_has_the_document_agent_vote_first_with_its_weight():
    text = _doc("    mode: vote\n    aggregator: weighted\n    weights: [3, 1, 1]\n")
    clients = {
        "chair": ScriptedChatClient([_ballot("yes")]),
        "first": ScriptedChatClient([_ballot("no")]),
        "second": ScriptedChatClient([_ballot("no")]),
    }
    agent = _build(text, **clients)
    vote = agent.orchestration
    assert isinstance(vote, VoteOrchestration)
    assert [m.name for m in vote.members] == ["chair", "first", "second"]
    assert vote.weights == {"chair": 3, "first": 1, "second": 1}
    # the chair's weight 3 outweighs the two others' 2: as the original counts it
    assert (await agent.run("Ship it?")).text == "yes"
    assert len(clients["chair"].requests) == 1


def test_a_majority_aggregator_of_the_original_includes_the_document_agent():
    text = _doc("    mode: vote\n    aggregator: majority\n")
    agent = _build(text, **{n: ScriptedChatClient([]) for n in ("chair", "first", "second")})
    assert [m.name for m in agent.orchestration.members] == ["chair", "first", "second"]


def test_a_raf_vote_keeps_its_voters_to_the_sub_agents_and_says_how_to_include_it(tmp_path):
    path = tmp_path / "panel.yaml"
    path.write_text(_doc("    mode: vote\n    method: majority\n"), encoding="utf-8")
    loaded = load_file(path, check_extras=False)
    assert loaded.orchestration is not None and not loaded.orchestration.include_self
    assert any("includeSelf: true" in w.message for w in loaded.warnings)
    agent = _build(path.read_text(), **{n: ScriptedChatClient([]) for n in ("first", "second")})
    assert [m.name for m in agent.orchestration.members] == ["first", "second"]


def test_include_self_in_rafs_spelling_names_the_weight_self():
    text = _doc(
        "    mode: vote\n    method: weighted\n    includeSelf: true\n"
        "    weights: {self: 2, first: 1}\n"
    )
    agent = _build(text, **{n: ScriptedChatClient([]) for n in ("chair", "first", "second")})
    assert agent.orchestration.weights == {"chair": 2, "first": 1}


def test_a_list_of_weights_of_the_wrong_length_names_the_voters(tmp_path):
    path = tmp_path / "panel.yaml"
    path.write_text(
        _doc("    mode: vote\n    aggregator: weighted\n    weights: [3, 1]\n"), encoding="utf-8"
    )
    with pytest.raises(ValidationProblems) as info:
        load_file(path, check_extras=False)
    [problem] = info.value.problems
    assert problem.key_path == "metadata.orchestration.weights"
    assert "2 weights for 3 voters" in problem.message
    assert "the document's own agent, then the sub-agents (self, first, second)" in problem.message


async def test_an_original_sequential_runs_the_document_agent_first():
    text = _doc("    mode: sequential\n    passOutput: true\n", subs=("editor",))
    clients = {"chair": ScriptedChatClient(["draft"]), "editor": ScriptedChatClient(["edited"])}
    agent = _build(text, **clients)
    assert isinstance(agent.orchestration, SequentialOrchestration)
    assert [m.name for m in agent.orchestration.members] == ["chair", "editor"]
    assert (await agent.run("write")).text == "edited"
    assert clients["editor"].requests[-1].messages[-1].text == "draft"


def test_a_concurrent_with_a_votes_aggregator_drops_it_and_runs_the_document_agent(tmp_path):
    path = tmp_path / "review.yaml"
    path.write_text(_doc("    mode: concurrent\n    aggregator: majority\n"), encoding="utf-8")
    loaded = load_file(path, check_extras=False)
    [warning] = [w for w in loaded.warnings if "aggregation" in w.message]
    assert warning.key_path == "metadata.orchestration.aggregator" and warning.line == 8
    agent = _build(
        path.read_text(), **{n: ScriptedChatClient([]) for n in ("chair", "first", "second")}
    )
    concurrent = agent.orchestration
    assert isinstance(concurrent, ConcurrentOrchestration)
    assert concurrent.aggregator is None
    assert [m.name for m in concurrent.members] == ["chair", "first", "second"]


def test_a_concurrent_aggregator_naming_a_sub_agent_stays_rafs_aggregator():
    text = _doc("    mode: concurrent\n    aggregator: second\n")
    agent = _build(text, **{n: ScriptedChatClient([]) for n in ("first", "second")})
    assert agent.orchestration.aggregator.name == "second"
    assert [m.name for m in agent.orchestration.members] == ["first"]


def test_any_other_aggregator_of_a_vote_counts_by_majority(tmp_path):
    path = tmp_path / "tally.yaml"
    path.write_text(_doc("    mode: vote\n    aggregator: average\n"), encoding="utf-8")
    loaded = load_file(path, check_extras=False)
    assert loaded.orchestration is not None and loaded.orchestration.method == "majority"
    assert any("'average' is read as majority" in w.message for w in loaded.warnings)
