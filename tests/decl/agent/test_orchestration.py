"""`subAgents` + `metadata.orchestration` builds the orchestration; a bad mode or option is a
located problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf import FinishReason
from raf.core.agent_like import EquippedAgent, own_tools
from raf.core.errors import ValidationProblems
from raf.decl import DeclAgentBuilder
from raf.decl.documents.loaded import LoadedAgent
from raf.decl.documents.loader import load
from raf.decl.documents.orchestration import MagenticDecl
from raf.orchestrations import (
    GroupChatOrchestration,
    HandoffOrchestration,
    OrchestrationAgent,
    PipelineOrchestration,
    SequentialOrchestration,
    VoteOrchestration,
)
from raf.testing import ScriptedChatClient, call, reply


def doc(orchestration: str, *, members: str = "writer, editor", lead: str = "") -> str:
    subs = "".join(
        f"  - name: {m}\n    description: the {m}\n    model:\n"
        f"      connection: {{kind: reference, name: {m}}}\n"
        for m in members.split(", ")
    )
    return f"name: team\ndescription: A team\n{lead}subAgents:\n{subs}metadata:\n{orchestration}"


def build(text: str, **clients: ScriptedChatClient):
    builder = DeclAgentBuilder().from_yaml_str(text)
    for name, client in clients.items():
        if name == "lead":
            builder.with_chat_client(client)
        else:
            builder.with_connection(name, client=client)
    return builder.build()


def loaded(text: str) -> LoadedAgent:
    return load(text, fmt="yaml", file="<string>", base_dir=Path.cwd())


def problems(text: str) -> list[tuple[int | None, str | None, str]]:
    with pytest.raises(ValidationProblems) as info:
        DeclAgentBuilder().from_yaml_str(text)
    return [(p.line, p.key_path, p.message) for p in info.value.problems]


async def test_a_mode_string_builds_the_orchestration_and_runs_it():
    writer = ScriptedChatClient(["draft"])
    editor = ScriptedChatClient(["final"])
    agent = build(doc("  orchestration: sequential\n"), writer=writer, editor=editor)
    assert isinstance(agent, OrchestrationAgent)
    assert isinstance(agent.orchestration, SequentialOrchestration)
    assert (agent.name, agent.description) == ("team", "A team")
    # the sub-agents are members, not tools: the orchestration has no tools of its own
    assert not isinstance(agent, EquippedAgent) and own_tools(agent) == ()
    response = await agent.run("write")
    assert response.text == "final"
    assert [m.author_name for m in response.messages] == ["writer", "editor"]
    assert editor.requests[0].messages[-1].text == "draft"


async def test_options_in_camel_case_reach_the_orchestration():
    text = doc(
        "  orchestration:\n    mode: group_chat\n    maxRounds: 3\n"
        "    terminationKeywords: [DONE]\n    selector: fixed\n    order: [editor, writer]\n"
    )
    agent = build(text, writer=ScriptedChatClient(["w"]), editor=ScriptedChatClient(["e", "DONE"]))
    orch = agent.orchestration
    assert isinstance(orch, GroupChatOrchestration)
    assert (orch.max_rounds, orch.termination_keywords, orch.order) == (
        3,
        ["DONE"],
        ["editor", "writer"],
    )
    response = await agent.run("go")
    assert [m.author_name for m in response.messages] == ["editor", "writer", "editor"]


async def test_the_documents_own_agent_is_the_triage_of_a_handoff():
    lead = ScriptedChatClient([reply("", call("handoff_to_editor", call_id="h")), "to the editor"])
    editor = ScriptedChatClient(["edited"])
    text = doc("  orchestration: handoff\n", lead="instructions: You route.\n")
    agent = build(text, lead=lead, writer=ScriptedChatClient([]), editor=editor)
    assert isinstance(agent.orchestration, HandoffOrchestration)
    response = await agent.run("please edit")
    assert [m.author_name for m in response.messages] == ["team", "editor"]
    assert lead.requests[0].system == "You route."
    assert lead.requests[0].tool_names == ["handoff_to_writer", "handoff_to_editor"]


async def test_vote_and_pipeline_options():
    vote = build(
        doc(
            "  orchestration:\n    mode: vote\n    method: weighted\n"
            "    weights: {writer: 2}\n    choices: [ship, wait]\n    rounds: 2\n"
        ),
        writer=ScriptedChatClient(["vote: ship"]),
        editor=ScriptedChatClient(["vote: wait"]),
    )
    assert isinstance(vote.orchestration, VoteOrchestration)
    assert (await vote.run("?")).text == "ship"
    pipeline = build(
        doc(
            "  orchestration:\n    mode: pipeline\n    phases:\n"
            "      - {name: draft, members: [writer]}\n"
            "      - name: review\n        members: [editor]\n"
            "        loopBack: {to: draft, when: REDO, maxLoops: 1}\n"
        ),
        writer=ScriptedChatClient(["d1", "d2"]),
        editor=ScriptedChatClient(["REDO it", "fine"]),
    )
    assert isinstance(pipeline.orchestration, PipelineOrchestration)
    response = await pipeline.run("go")
    assert [m.author_name for m in response.messages] == ["writer", "editor", "writer", "editor"]


async def test_a_member_approval_pauses_the_declared_orchestration(tmp_path: Path):
    from raf.core.options import AgentRunOptions, ToolApprovalResponse
    from tests.decl.helpers import PlainTool

    (tmp_path / "coder.yaml").write_text(
        "name: coder\nmodel:\n  connection: {kind: reference, name: coder}\n"
        "tools:\n  - {kind: custom, name: write, approvalRequired: true}\n"
    )
    (tmp_path / "team.yaml").write_text(
        "name: team\nsubAgents:\n  - file: coder.yaml\nmetadata:\n  orchestration: sequential\n"
    )
    coder = ScriptedChatClient([reply("", call("write", call_id="w1")), "written"])
    agent = (
        DeclAgentBuilder()
        .from_yaml_file(tmp_path / "team.yaml")
        .with_connection("coder", client=coder)
        .register_factory("write", lambda c: PlainTool("write"))
        .build()
    )
    session = agent.create_session()
    paused = await agent.run("write it", session=session)
    assert paused.finish_reason is FinishReason.AWAITING_APPROVAL
    assert [p.call_id for p in session.pending_approvals] == ["w1"]
    options = AgentRunOptions(
        tool_approval_responses=[ToolApprovalResponse(call_id="w1", approved=True)]
    )
    done = await agent.run([], session=session, options=options)
    assert done.text == "written"


def test_an_unknown_mode_is_located_with_a_suggestion():
    text = doc("  orchestration: sequencial\n")
    [(line, path, message)] = problems(text)
    assert (line, path) == (13, "metadata.orchestration")
    assert message.startswith("unknown orchestration mode 'sequencial'; did you mean 'sequential'?")
    [(line, path, message)] = problems(doc("  orchestration:\n    mode: grup_chat\n"))
    assert (line, path) == (14, "metadata.orchestration.mode")
    assert "did you mean 'group_chat'?" in message


def test_an_unknown_option_is_located_with_a_suggestion():
    text = doc("  orchestration:\n    mode: group_chat\n    maxRound: 3\n")
    [(line, path, message)] = problems(text)
    assert (line, path) == (15, "metadata.orchestration.maxRound")
    assert message == "unknown option 'maxRound'; did you mean 'maxRounds'?"
    text = doc("  orchestration:\n    mode: sequential\n    maxRoundz: 3\n")
    [(_, path, message)] = problems(text)
    assert message == "unknown option 'maxRoundz'; allowed here: mode, passOn, includeSelf"


def test_another_modes_option_of_the_original_is_a_warning_without_effect():
    """The original framework reads every mode's options in any mode and uses the mode's
    own: `maxRounds` (a group chat's) in a sequential orchestration loads, with a located
    warning that it has no effect."""
    result = loaded(doc("  orchestration:\n    mode: sequential\n    maxRounds: 3\n"))
    assert result.orchestration.mode == "sequential"
    [warning] = [w for w in result.warnings if w.key_path == "metadata.orchestration.maxRounds"]
    assert warning.line == 15
    assert "group chat orchestration; a sequential orchestration has none" in warning.message


def test_bad_values_and_unknown_member_names_are_located():
    found = problems(
        doc(
            "  orchestration:\n    mode: pipeline\n    phases:\n"
            "      - {name: a, members: [writr], mode: parallel}\n"
            "      - {name: b, members: [editor], loopBack: {to: c, when: x}}\n"
        )
    )
    assert (16, "metadata.orchestration.phases[0].mode") in [(f[0], f[1]) for f in found]
    assert any("'parallel' is not allowed here" in f[2] for f in found)
    found = problems(
        doc(
            "  orchestration:\n    mode: pipeline\n    phases:\n"
            "      - {name: a, members: [writr]}\n"
            "      - {name: b, members: [editor], loopBack: {to: c, when: x}}\n"
        )
    )
    assert found == [
        (
            16,
            "metadata.orchestration.phases[0].members[0]",
            "'writr' is no sub-agent; did you mean 'writer'? (sub-agents: writer, editor)",
        ),
        (17, "metadata.orchestration.phases[1].loopBack.to", "'c' is not this or an earlier phase"),
    ]


def test_no_sub_agents_is_a_problem():
    [(_, _, message)] = problems("name: alone\nmetadata:\n  orchestration: vote\n")
    assert message == "a vote orchestration needs subAgents"


def test_a_mapping_without_a_mode_is_magentic_as_in_the_original():
    """The original's orchestration object defaults its mode to magentic."""
    builder = loaded(doc("  orchestration:\n    maxIterations: 4\n"))
    decl = builder.orchestration
    assert isinstance(decl, MagenticDecl) and decl.max_iterations == 4
    [warning] = builder.warnings
    assert warning.key_path == "metadata.orchestration" and "magentic" in warning.message


@pytest.mark.parametrize("key", ["maxIterations", "max_iterations"])
def test_iterations_under_metadata_are_the_orchestrations(key):
    """The original's older place for the iterations, directly under `metadata`: read
    where the orchestration gives none; its own `maxIterations` wins."""
    shorthand = loaded(doc(f"  orchestration: magentic\n  {key}: 6\n"))
    assert shorthand.orchestration.max_iterations == 6
    both = loaded(doc(f"  orchestration: {{mode: magentic, maxIterations: 2}}\n  {key}: 6\n"))
    assert both.orchestration.max_iterations == 2
    ignored = loaded(doc(f"  orchestration: sequential\n  {key}: 6\n"))
    [warning] = [w for w in ignored.warnings if w.key_path == f"metadata.{key}"]
    assert "is ignored" in warning.message and warning.line == 14


def test_sub_agents_without_an_orchestration_are_tools_and_say_what_the_original_does():
    """raf offers such sub-agents as tools; the original forms a magentic orchestration of
    15 iterations of them: a located warning says so and how to ask for it."""
    builder = loaded(doc("  role: lead\n"))
    assert builder.orchestration is None
    [warning] = builder.warnings
    assert (warning.line, warning.key_path) == (4, "subAgents")
    assert "magentic orchestration of 15 iterations" in warning.message


@pytest.mark.parametrize("key", ["maxIterations", "max_iterations"])
def test_iterations_without_an_orchestration_form_the_originals_magentic_one(key):
    """`metadata.maxIterations` without an orchestration is the original's older form of
    its default: a magentic orchestration of the sub-agents with those iterations."""
    builder = loaded(doc(f"  {key}: 7\n"))
    decl = builder.orchestration
    assert isinstance(decl, MagenticDecl) and decl.max_iterations == 7
    assert builder.warnings == []
    [(line, path, message)] = problems(doc(f"  {key}: 0\n"))
    assert (line, path) == (13, f"metadata.{key}") and "greater than or equal to 1" in message


def test_a_mode_without_a_lead_warns_about_the_documents_own_instructions():
    builder = DeclAgentBuilder().from_yaml_str(
        doc("  orchestration: concurrent\n", lead="instructions: Unused.\n")
    )
    [warning] = builder.warnings
    assert warning.key_path == "metadata.orchestration"
    assert "instructions, tools and contexts are not used" in warning.message


async def test_a_sub_agent_named_coordinator_leaves_the_members():
    text = doc(
        "  orchestration:\n    mode: group_chat\n    selector: coordinator\n"
        "    coordinator: editor\n    maxRounds: 1\n"
    )
    editor = ScriptedChatClient(["writer"])
    writer = ScriptedChatClient(["drafted"])
    agent = build(text, writer=writer, editor=editor)
    orch = agent.orchestration
    assert isinstance(orch, GroupChatOrchestration)
    assert [m.name for m in orch.members] == ["writer"]
    assert (await agent.run("go")).text == "drafted"


async def test_a_handoff_route_back_to_the_document_agent_builds_it():
    text = doc(
        "  orchestration:\n    mode: handoff\n    triage: writer\n    routingField: to\n"
        "    handoffs: {writer: [self], self: [editor]}\n",
        lead="instructions: You route.\n",
    )
    lead = ScriptedChatClient(['{"to": "editor"}'])
    writer = ScriptedChatClient(['{"to": "team"}'])
    editor = ScriptedChatClient(["edited"])
    agent = build(text, lead=lead, writer=writer, editor=editor)
    response = await agent.run("go")
    assert [m.author_name for m in response.messages] == ["writer", "team", "editor"]


def test_the_json_schema_describes_metadata_orchestration():
    import jsonschema
    import yaml

    from raf.decl import json_schema

    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    example = Path(__file__).resolve().parents[3] / "examples" / "editorial-team" / "team.yaml"
    validator.validate(yaml.safe_load(example.read_text(encoding="utf-8")))
    for bad in ("sequencial", {"mode": "vote", "rounds": 0}, {"mode": "group_chat", "x": 1}):
        assert not validator.is_valid({"name": "t", "metadata": {"orchestration": bad}})
    nested = {"name": "t", "subAgents": [{"name": "s", "metadata": {"orchestration": "nope"}}]}
    assert not validator.is_valid(nested)
    assert validator.is_valid({"name": "t", "metadata": {"orchestration": "vote", "owner": "me"}})


async def test_build_agent_is_typed_and_refuses_an_orchestration_by_name():
    from raf import Agent, ConfigurationError

    builder = DeclAgentBuilder().from_yaml_str(doc("  orchestration: sequential\n"))
    builder.with_connection("writer", client=ScriptedChatClient(["draft"]))
    builder.with_connection("editor", client=ScriptedChatClient(["final"]))
    with pytest.raises(
        ConfigurationError, match="builds OrchestrationAgent 'team'.*build_agent_like"
    ):
        builder.build_agent()
    team = builder.build_agent_like()
    assert isinstance(team, OrchestrationAgent) and (await team.run("write")).text == "final"

    plain = DeclAgentBuilder().from_yaml_str("name: solo\ninstructions: Be brief.\n")
    agent = plain.with_chat_client(ScriptedChatClient(["hi"])).build_agent()
    assert isinstance(agent, Agent) and (await agent.run("hello")).text == "hi"
