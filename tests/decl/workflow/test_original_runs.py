"""The original framework's documents run in raf where they need no model (or a scripted
one): a graph of rhai nodes runs once their names are bound to Python functions, and an
agent node that carries its agent inline uses that agent, not its `agent_ref`."""

from __future__ import annotations

from pathlib import Path

from raf.decl.workflow import DeclWorkflowBuilder
from raf.testing import ScriptedChatClient

ORIGINAL = Path(__file__).parents[1] / "original"


async def test_a_graph_of_rhai_nodes_runs_with_the_functions_bound() -> None:
    workflow = (
        DeclWorkflowBuilder()
        .from_file(ORIGINAL / "graph_minimal.json")
        .with_function(lambda text: text.upper(), name="only")
        .build()
    )
    result = await workflow.run("quiet words")
    assert result.outputs == ["QUIET WORDS"]


async def test_the_originals_graph_runs_its_inline_agents() -> None:
    model = ScriptedChatClient(["a draft", "checked"])
    workflow = (
        DeclWorkflowBuilder()
        .from_file(ORIGINAL / "graph.json")
        .with_chat_client(model)
        .with_function(lambda text: f"shaped {text}", name="shape")
        .with_function(lambda text: f"tidied {text}", name="tidy")
        .with_function(lambda text: f"done: {text}", name="done")
        .build()
    )
    result = await workflow.run("write it")
    assert result.outputs[0] == "checked"
    assert result.outputs[-1] == "done: checked"
    # the inline agent of node 'draft' ran, not an agent named by its agent_ref
    assert "Draft it." in str(model.requests[0].messages[0].text)
    second = model.requests[1].messages
    assert "Check it." in str(second[0].text)
    assert "shaped a draft" in second[-1].text and "tidied a draft" in second[-1].text
