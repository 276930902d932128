"""The example agents in examples/ build, validate and run on the scripted model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from raf import FinishReason
from raf.context.workspace import WorkspaceContextProvider
from raf.core.messages import Role
from raf.decl import DeclAgentBuilder
from raf.decl.documents.loader import load_file
from raf.decl.documents.schema import FILE_TOOLS
from raf.testing import ScriptedChatClient, call, reply

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMES = ["coding-assistant", "research-agent", "support-agent"]


def copy_example(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns("memory"))
    return target / "agent.yaml"


@pytest.mark.parametrize("name", NAMES)
def test_example_validates_and_has_a_readme(name):
    loaded = load_file(EXAMPLES / name / "agent.yaml")
    assert loaded.decl.name == name
    assert not loaded.warnings
    readme = (EXAMPLES / name / "README.md").read_text(encoding="utf-8")
    assert "raf validate agent.yaml" in readme


async def test_coding_assistant_reviews_a_file_in_its_workspace(tmp_path):
    path = copy_example("coding-assistant", tmp_path)
    (path.parent / "app.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    model = ScriptedChatClient(
        [
            reply("", call("load_skill", skill_name="code-review", call_id="c1")),
            reply("", call("read_file", path="app.py", call_id="c2")),
            "app.py line 2: add() subtracts; return a + b instead.",
        ]
    )
    agent = DeclAgentBuilder().from_yaml_file(path).with_chat_client(model).build()
    workspaces = [p for p in agent.context_providers if isinstance(p, WorkspaceContextProvider)]
    assert sorted(t.name for t in workspaces[0].tools) == sorted([*FILE_TOOLS, "run_command"])
    assert [p.kind for p in agent.context_providers] == [
        "history",
        "workspace",
        "skills",
        "compression",
    ]
    response = await agent.run("review app.py")
    assert response.finish_reason is FinishReason.STOP
    assert response.text.startswith("app.py line 2")
    results = {r.call_id: r for m in response.messages for r in m.function_results}
    assert results["c1"].error is None and "Code review" in str(results["c1"].result)
    assert results["c2"].error is None and "return a - b" in str(results["c2"].result)
    assert "code-review" in model.requests[0].system


async def test_research_agent_offers_web_tools_and_answers(tmp_path):
    path = copy_example("research-agent", tmp_path)
    model = ScriptedChatClient(["Python 3.13 added TypeIs. Sources: https://docs.python.org"])
    agent = DeclAgentBuilder().from_yaml_file(path).with_chat_client(model).build()
    assert sorted(t.name for t in agent.tools) == ["web_fetch", "web_search"]
    assert agent.max_tool_rounds == 8
    response = await agent.run("What is new in typing?")
    assert "Sources:" in response.text
    offered = model.requests[0].tool_names
    assert {"web_fetch", "web_search", "compact"} == set(offered)  # compact: the compressor's
    assert "cite" in model.requests[0].system or "URLs" in model.requests[0].system


async def test_support_agent_answers_from_the_faq_and_keeps_memory(tmp_path):
    path = copy_example("support-agent", tmp_path)
    model = ScriptedChatClient(["Standard shipping takes 3 to 5 working days."])
    agent = DeclAgentBuilder().from_yaml_file(path).with_chat_client(model).build()
    # the instructions are a template, rendered at each run with its default company
    assert agent.instructions_template is not None
    assert [p.name for p in agent.context_providers] == ["history", "super-brain", "faq"]
    try:
        response = await agent.run("How long does shipping take?")
    finally:
        for provider in agent.context_providers:
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()
    assert response.text.startswith("Standard shipping")
    request = model.requests[0]
    system = "\n".join(m.text for m in request.messages if m.role is Role.SYSTEM)
    assert "3 to 5 working days" in system  # the FAQ passage was injected
    assert "You are Acme's support agent" in system
    assert (path.parent / "memory").is_dir()  # the memory folder was set up
