"""The declarative linkage rules and their summary table, one test (or a few) per rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf import AgentRunOptions, FinishReason, FunctionInvokingChatClient, ToolApprovalResponse
from raf.context.workspace import WorkspaceContextProvider
from raf.core.errors import MissingExtraError, ValidationProblems, install_hint
from raf.core.tools import ApprovalRequiredTool
from raf.decl import DeclAgentBuilder
from raf.decl.documents import extras as extras_module
from raf.testing import ScriptedChatClient, call, reply
from raf.tools.files import ReadFile
from raf.tools.workspace import ScopePolicy
from tests.decl.helpers import (
    MarkerProvider,
    PlainTool,
    StandInScopeTool,
    builder_for,
    names,
    write_skill,
)

WORKSPACE = """
name: linked
instructions: You help.
contexts:
  - kind: workspace
    name: project
    config: {root: ., policy: approve}
"""


def workspace_of(agent: object) -> WorkspaceContextProvider:
    found = [p for p in agent.context_providers if isinstance(p, WorkspaceContextProvider)]  # type: ignore[attr-defined]
    assert len(found) == 1
    return found[0]


# -- extras ---------------------------------------------------------------------


def test_rule0_missing_extra_is_reported_with_the_pip_command(tmp_path, monkeypatch):
    monkeypatch.setattr(extras_module, "module_available", lambda module: module != "mcp")
    text = "name: a\ntools:\n  - kind: mcp\n    name: fs\n    config: {command: npx}\n"
    with pytest.raises(ValidationProblems) as info:
        builder_for(text, tmp_path)
    (problem,) = info.value.problems
    assert (problem.line, problem.column, problem.key_path) == (3, 11, "tools[0].kind")
    assert install_hint("mcp") in problem.message


def test_rule0_an_import_error_while_building_names_the_extra(tmp_path, monkeypatch):
    def factory(context):
        raise MissingExtraError("the fancy tool", "web", "markdownify")

    builder = builder_for("name: a\ntools:\n  - kind: custom\n    name: fancy\n", tmp_path)
    builder.register_factory("fancy", factory)
    with pytest.raises(ValidationProblems) as info:
        builder.build()
    assert install_hint("web") in str(info.value)
    assert isinstance(info.value.__cause__, MissingExtraError)


def test_rule0_core_build_needs_no_optional_integration(tmp_path):
    agent = builder_for("name: plain\ninstructions: hi\n", tmp_path).build()
    assert names(agent.context_providers) == ["history"]


# -- workspace routing -----------------------------------------------------------


def routed_builder(tmp_path: Path, client: ScriptedChatClient | None = None) -> DeclAgentBuilder:
    text = WORKSPACE + (
        "tools:\n"
        "  - {kind: file, name: read_file}\n"
        "  - {kind: file, name: write_file}\n"
        "  - {kind: web, name: web_search}\n"
        "  - {kind: function, name: echo}\n"
    )
    builder = builder_for(text, tmp_path, client)
    builder.register_factory("read_file", lambda c: StandInScopeTool("read_file"))
    builder.register_factory("write_file", lambda c: StandInScopeTool("write_file"))
    builder.register_factory("web_search", lambda c: PlainTool("web_search"))
    builder.register_factory("echo", lambda c: PlainTool("echo"))
    return builder


async def test_rule1_scope_tools_go_to_the_workspace_and_others_to_the_agent(tmp_path):
    client = ScriptedChatClient([reply("", call("read_file", path="a.txt")), "done"])
    agent = routed_builder(tmp_path, client).build()
    assert names(agent.tools) == ["web_search", "echo"]
    workspace = workspace_of(agent)
    assert names(workspace.tools) == ["read_file", "write_file"]
    await agent.run("read a.txt")
    offered = client.requests[0].tool_names
    assert sorted(offered) == ["echo", "read_file", "web_search", "write_file"]
    result = client.requests[1].messages[-1].function_results[0]
    assert result.result == "read_file in project"  # step 1: the scope was injected


def test_rule1_real_declared_tools_scope_ones_routed_web_one_not(tmp_path):
    text = (
        WORKSPACE + "tools:\n  - {kind: file, name: read_file}\n  - {kind: web, name: web_search}\n"
    )
    agent = builder_for(text, tmp_path).build()
    assert names(agent.tools) == ["web_search"]
    (routed,) = workspace_of(agent).tools
    assert routed.requires_approval  # step 2: wrapped for approval outside the root
    assert routed.inner.scope.name == "project"  # type: ignore[attr-defined]  # step 1


def test_rule1_a_real_scope_tool_added_in_code_is_not_routed(tmp_path):
    from raf.tools.files import RunCommand

    builder = builder_for(WORKSPACE, tmp_path).with_tool("run_command", lambda c: RunCommand())
    agent = builder.build()
    assert names(agent.tools) == ["run_command"]
    assert names(workspace_of(agent).tools) == []
    assert not isinstance(agent.tools[0], ApprovalRequiredTool)


def test_rule1_tools_added_in_code_are_not_routed(tmp_path):
    builder = routed_builder(tmp_path)
    builder.with_tool("my_scoped_tool", lambda c: StandInScopeTool("my_scoped_tool"))
    agent = builder.build()
    assert "my_scoped_tool" in names(agent.tools)
    assert "my_scoped_tool" not in names(workspace_of(agent).tools)
    injected = next(t for t in agent.tools if t.name == "my_scoped_tool")
    assert isinstance(injected, StandInScopeTool) and injected.scope is None


def test_rule1_without_a_workspace_scope_tools_register_normally(tmp_path):
    text = "name: a\ntools:\n  - {kind: file, name: read_file}\n"
    builder = builder_for(text, tmp_path)
    builder.register_factory("read_file", lambda c: StandInScopeTool("read_file"))
    agent = builder.build()
    assert names(agent.tools) == ["read_file"]


def policy_agent(tmp_path: Path, policy: str, client: ScriptedChatClient):
    text = (
        f"name: a\ncontexts:\n  - kind: workspace\n    name: ws\n"
        f"    config: {{root: ., policy: {policy}}}\n"
        "tools:\n  - {kind: file, name: read_file}\n"
    )
    builder = builder_for(text, tmp_path, client)
    builder.register_factory("read_file", lambda c: ReadFile())
    return builder.build()


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("read", ScopePolicy.ALLOW_ALL),
        ("allow", ScopePolicy.ALLOW_ALL),
        ("allow_all", ScopePolicy.ALLOW_ALL),
        ("approve", ScopePolicy.APPROVE_OUTSIDE),
        ("ask", ScopePolicy.APPROVE_OUTSIDE),
        ("approve_outside", ScopePolicy.APPROVE_OUTSIDE),
        ("deny", ScopePolicy.DENY_OUTSIDE),
        ("restrict", ScopePolicy.DENY_OUTSIDE),
        ("deny_outside", ScopePolicy.DENY_OUTSIDE),
        ("sometimes", ScopePolicy.DENY_OUTSIDE),  # unknown: fails closed
    ],
)
def test_rule1_yaml_policy_values_map_to_scope_policies(tmp_path, policy, expected):
    agent = policy_agent(tmp_path, policy, ScriptedChatClient(["ok"]))
    assert workspace_of(agent).scope.policy is expected


async def test_rule1_approve_policy_asks_before_leaving_the_workspace(tmp_path):
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("secret", encoding="utf-8")
    (tmp_path / "inside.txt").write_text("hello", encoding="utf-8")
    client = ScriptedChatClient(
        [
            reply("", call("read_file", path="inside.txt", call_id="c1")),
            reply("", call("read_file", path=str(outside), call_id="c2")),
            "read it",
        ]
    )
    agent = policy_agent(tmp_path, "approve", client)
    session = agent.create_session()
    first = await agent.run("read both", session=session)
    assert first.finish_reason is FinishReason.AWAITING_APPROVAL
    assert [p.call_id for p in first.pending_approvals] == ["c2"]  # inside ran directly
    resumed = await agent.run(
        [],
        session=session,
        options=AgentRunOptions(
            tool_approval_responses=[ToolApprovalResponse(call_id="c2", approved=True)]
        ),
    )
    assert resumed.text == "read it"
    results = [r for m in session.messages for r in m.function_results]
    assert [r.error is None for r in results] == [True, True]


async def test_rule5_deny_policy_refuses_in_the_tool_not_by_approval(tmp_path):
    client = ScriptedChatClient([reply("", call("read_file", path="/etc/hostname")), "no"])
    agent = policy_agent(tmp_path, "deny", client)
    response = await agent.run("read it")
    assert response.finish_reason is FinishReason.STOP
    (result,) = [r for m in response.messages for r in m.function_results]
    assert result.error is not None and "outside" in result.error.lower()


# -- skills ------------------------------------------------------------------------


async def test_rule2_skills_tools_are_injected_not_declared_not_routed(tmp_path):
    write_skill(tmp_path / "skills", "review")
    client = ScriptedChatClient(["ok"])
    text = WORKSPACE + (
        "  - kind: skills\n    name: code-review\n    config: {directory: skills}\n"
        "tools:\n  - {kind: file, name: read_file}\n"
    )
    builder = builder_for(text, tmp_path, client)
    builder.register_factory("read_file", lambda c: StandInScopeTool("read_file"))
    agent = builder.build()
    assert names(agent.tools) == []
    assert names(workspace_of(agent).tools) == ["read_file"]
    await agent.run("hi")
    offered = client.requests[0].tool_names
    assert {"load_skill", "read_skill_resource", "read_file"} <= set(offered)
    assert "review" in client.requests[0].system


async def test_rule2_skill_tools_run_without_workspace_approval(tmp_path):
    write_skill(tmp_path / "skills", "review")
    client = ScriptedChatClient(
        [
            reply(
                "",
                call("load_skill", skill_name="review", call_id="l"),
                call("read_skill_resource", skill_name="review", path="references/guide.md"),
            ),
            "ok",
        ]
    )
    text = WORKSPACE + "  - kind: skills\n    config: {directory: skills}\n"
    agent = builder_for(text, tmp_path, client).build()
    response = await agent.run("use the skill")
    assert response.finish_reason is FinishReason.STOP  # no approval asked under `approve`
    loaded, resource = response.messages[1].function_results
    assert loaded.error is None and "Do it well." in loaded.as_text()
    assert resource.error is None and "A guide." in resource.as_text()
    assert names(workspace_of(agent).tools) == []


async def test_rule2_read_skill_resource_only_when_a_skill_has_resources(tmp_path):
    write_skill(tmp_path / "skills", "plain", resource=False)
    client = ScriptedChatClient(["ok"])
    text = "name: a\ncontexts:\n  - kind: skills\n    config: {directory: skills}\n"
    await builder_for(text, tmp_path, client).build().run("hi")
    assert client.requests[0].tool_names == ["load_skill"]


# -- history ----------------------------------------------------------------------


async def test_rule3_history_is_always_present_and_first(tmp_path):
    write_skill(tmp_path / "skills", "review")
    client = ScriptedChatClient(["one", "two"])
    text = WORKSPACE + "  - kind: skills\n    config: {directory: skills}\n"
    agent = builder_for(text, tmp_path, client).build()
    assert [p.kind for p in agent.context_providers][:1] == ["history"]
    session = agent.create_session()
    await agent.run("first", session=session)
    await agent.run("second", session=session)
    texts = [m.text for m in client.requests[1].messages if m.role.value != "system"]
    assert texts == ["first", "one", "second"]


def test_rule3_history_cannot_be_declared(tmp_path):
    with pytest.raises(ValidationProblems) as info:
        builder_for("name: a\ncontexts:\n  - kind: history\n", tmp_path)
    assert "unknown context kind 'history'" in str(info.value)


# -- tool loop ---------------------------------------------------------------------


async def test_rule4_tools_wrap_the_client_in_the_tool_loop_with_max_rounds(tmp_path):
    client = ScriptedChatClient(
        [reply("", call("echo")), reply("", call("echo")), reply("", call("echo")), "final"]
    )
    text = "name: a\nmaxToolRounds: 2\ntools:\n  - {kind: function, name: echo}\n"
    builder = builder_for(text, tmp_path, client)
    builder.register_factory("echo", lambda c: PlainTool("echo"))
    agent = builder.build()
    assert isinstance(agent.chat_client, FunctionInvokingChatClient)
    assert agent.chat_client.max_tool_rounds == 2
    response = await agent.run("go")
    assert len(client.requests) == 3  # two rounds of tools, then once more without tools
    assert client.requests[2].tool_names == []
    assert response.finish_reason is FinishReason.OTHER


def test_rule4_max_tool_rounds_defaults_to_ten(tmp_path):
    builder = builder_for("name: a\ntools:\n  - {kind: web, name: web_fetch}\n", tmp_path)
    agent = builder.build()
    assert isinstance(agent.chat_client, FunctionInvokingChatClient)
    assert agent.chat_client.max_tool_rounds == 10


async def test_rule4_tools_injected_by_a_context_run_in_the_loop_with_max_rounds(tmp_path):
    write_skill(tmp_path / "skills", "review")
    again = call("load_skill", skill_name="review")
    client = ScriptedChatClient([reply("", again), reply("", again), "final"])
    text = (
        "name: a\nmaxToolRounds: 1\ncontexts:\n  - kind: skills\n    config: {directory: skills}\n"
    )
    response = await builder_for(text, tmp_path, client).build().run("go")
    assert len(client.requests) == 2  # one round of the injected tool, then no tools
    assert client.requests[0].tool_names and client.requests[1].tool_names == []
    assert response.messages[1].function_results[0].error is None


def test_rule4_no_tools_no_wrap(tmp_path):
    client = ScriptedChatClient(["ok"])
    agent = builder_for("name: a\n", tmp_path, client).build()
    assert agent.chat_client is client


# -- approval ----------------------------------------------------------------------


async def test_rule5_approval_required_tool_pauses_and_resumes(tmp_path):
    client = ScriptedChatClient([reply("", call("cancel", call_id="c1")), "cancelled"])
    text = "name: a\ntools:\n  - {kind: custom, name: cancel, approvalRequired: true}\n"
    builder = builder_for(text, tmp_path, client)
    builder.register_factory("cancel", lambda c: PlainTool("cancel"))
    agent = builder.build()
    assert isinstance(agent.tools[0], ApprovalRequiredTool)
    session = agent.create_session()
    paused = await agent.run("cancel it", session=session)
    assert paused.finish_reason is FinishReason.AWAITING_APPROVAL
    done = await agent.run(
        [],
        session=session,
        options=AgentRunOptions(
            tool_approval_responses=[ToolApprovalResponse(call_id="c1", approved=True)]
        ),
    )
    assert done.text == "cancelled"


@pytest.mark.parametrize(
    ("policy", "requires"), [("approve", True), ("read", False), ("deny", False)]
)
def test_rule5_table_routed_scope_tools_require_approval_only_under_approve(
    tmp_path, policy, requires
):
    text = (
        f"name: a\ncontexts:\n  - kind: workspace\n    config: {{root: ., policy: {policy}}}\n"
        "tools:\n  - kind: file\n  - kind: shell\n"
    )
    workspace = workspace_of(builder_for(text, tmp_path).build())
    assert len(workspace.tools) == 11  # the ten file tools and run_command
    assert {t.requires_approval for t in workspace.tools} == {requires}


async def test_rule5_plain_tool_needs_no_approval(tmp_path):
    client = ScriptedChatClient([reply("", call("echo")), "ok"])
    builder = builder_for("name: a\ntools:\n  - {kind: function, name: echo}\n", tmp_path, client)
    builder.register_factory("echo", lambda c: PlainTool("echo"))
    response = await builder.build().run("go")
    assert response.finish_reason is FinishReason.STOP


# -- compression last and provider order --------------------------------------------------


def test_rule7_compression_runs_last_even_when_declared_first(tmp_path):
    write_skill(tmp_path / "skills", "review")
    text = (
        "name: a\ncontexts:\n"
        "  - {kind: compression, config: {kind: sliding_window, keepLast: 4}}\n"
        "  - {kind: workspace, name: ws}\n"
        "  - {kind: skills, name: sk, config: {directory: skills}}\n"
    )
    builder = builder_for(text, tmp_path).with_context(MarkerProvider("extra"))
    agent = builder.build()
    assert [p.kind for p in agent.context_providers] == [
        "history",
        "workspace",
        "skills",
        "marker",
        "compression",
    ]


def test_rule7_top_level_compression_is_last(tmp_path):
    text = "name: a\ncompression: {kind: token_budget, budget: 1000}\n"
    agent = builder_for(text, tmp_path).with_context(MarkerProvider("m")).build()
    assert [p.kind for p in agent.context_providers] == ["history", "marker", "compression"]


async def test_rule7_compression_replaces_the_accumulated_messages(tmp_path):
    client = ScriptedChatClient(["a1", "a2", "a3"])
    text = "name: a\ncompression: {kind: sliding_window, keepLast: 2}\n"
    agent = builder_for(text, tmp_path, client).build()
    session = agent.create_session()
    for prompt in ("one", "two", "three"):
        await agent.run(prompt, session=session)
    sent = [m.text for m in client.requests[2].messages if m.role.value != "system"]
    assert "one" not in sent and sent[-1] == "three"


async def test_contexts_run_in_declaration_order(tmp_path):
    write_skill(tmp_path / "skills", "review")
    text = (
        "name: a\ncontexts:\n"
        "  - {kind: skills, name: first, config: {directory: skills}}\n"
        "  - {kind: workspace, name: second}\n"
    )
    client = ScriptedChatClient(["ok"])
    agent = builder_for(text, tmp_path, client).with_context(MarkerProvider("third")).build()
    assert names(agent.context_providers) == ["history", "first", "second", "third"]
    await agent.run("hi")
    system = client.requests[0].system
    assert system.index("review") < system.index("second") < system.index("[third]")


# -- summary table: super-brain ----------------------------------------------------------------


def test_memory_super_brain_is_declared_explicitly_with_its_own_model(tmp_path):
    from raf.context.memory import SuperBrainContextProvider

    curator = ScriptedChatClient([])
    text = (
        "name: a\ncontexts:\n  - kind: memory\n    name: super-brain\n    config:\n"
        "      directory: logs/super-brain\n      consolidationInterval: 5\n"
        "      memoryModel:\n        connection: {kind: reference, name: curator}\n"
    )
    builder = builder_for(text, tmp_path).with_connection("curator", client=curator)
    agent = builder.build()
    (memory,) = [p for p in agent.context_providers if p.kind == "memory"]
    assert isinstance(memory, SuperBrainContextProvider)
    assert memory.name == "super-brain" and memory.consolidation_interval == 5
    assert memory.directory == tmp_path / "logs" / "super-brain"
    assert memory.memory_client is curator


async def test_workspace_rules_in_yaml_are_layered_over_the_policy(tmp_path):
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key.txt").write_text("hunter2", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("public", encoding="utf-8")
    doc = (
        "name: ruled\n"
        "tools:\n  - kind: file\n    name: read_file\n"
        "contexts:\n  - kind: workspace\n    name: proj\n"
        "    config:\n      root: .\n      policy: allow\n"
        "      rules:\n        - {path: 'secrets/**', read: deny}\n"
    )
    client = ScriptedChatClient(
        [
            reply(
                "",
                call("read_file", path="secrets/key.txt", call_id="s"),
                call("read_file", path="notes.txt", call_id="n"),
            ),
            "done",
        ]
    )
    agent = builder_for(doc, tmp_path, client).build()
    response = await agent.run("read")
    secret, notes = response.messages[1].function_results
    assert secret.error is not None and "hunter2" not in secret.as_text()
    assert notes.error is None and "public" in notes.as_text()


def test_a_workspace_rule_that_says_nothing_is_a_located_error(tmp_path):
    doc = (
        "name: ruled\ncontexts:\n  - kind: workspace\n"
        "    config:\n      rules:\n        - {path: 'x/**'}\n"
    )
    with pytest.raises(ValidationProblems) as info:
        builder_for(doc, tmp_path).build()
    text = str(info.value)
    assert "contexts[0].config.rules[0]" in text and "needs 'action'" in text
