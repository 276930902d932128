"""The editorial-team example, in YAML and in Python, runs on the scripted model."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from raf.decl import DeclAgentBuilder
from raf.decl.documents.loader import load_file
from raf.orchestrations import GroupChatOrchestration
from raf.testing import ScriptedChatClient

FOLDER = Path(__file__).resolve().parents[2] / "examples" / "editorial-team"
# coordinator, writer, coordinator, critic, coordinator, writer, coordinator, critic
REPLIES = [
    "writer",
    "Tide pools hold life.",
    "critic",
    "Say which life.",
    "writer",
    "Tide pools hold anemones and crabs.",
    "critic",
    "APPROVED: vivid now.",
]


def python_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("editorial_team", FOLDER / "team.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_document_validates_without_warnings_and_the_readme_says_how_to_run_it():
    loaded = load_file(FOLDER / "team.yaml")
    assert loaded.decl.name == "editorial-team" and not loaded.warnings
    assert "raf validate team.yaml" in (FOLDER / "README.md").read_text(encoding="utf-8")


async def test_yaml_team_runs_until_the_critic_approves():
    model = ScriptedChatClient(REPLIES)
    team = DeclAgentBuilder().from_yaml_file(FOLDER / "team.yaml").with_chat_client(model).build()
    assert isinstance(team.orchestration, GroupChatOrchestration)
    response = await team.run("Write about tide pools.")
    assert [m.author_name for m in response.messages] == ["writer", "critic", "writer", "critic"]
    assert response.text == "APPROVED: vivid now."
    # the coordinator is the document's own agent, with its instructions
    assert model.requests[0].system.startswith("You are the editor-in-chief.")
    assert model.requests[1].system.startswith("You write short, clear pieces.")


async def test_python_team_runs_the_same_way_and_streams():
    from raf.core.responses import fold_stream

    model = ScriptedChatClient(REPLIES)
    team = python_example().build(model)
    folded = await fold_stream(team.run_stream("Write about tide pools."))
    assert [m.text for m in folded.messages] == REPLIES[1::2]
    assert model.requests[2].messages[-1].text.startswith("You coordinate a group chat")
