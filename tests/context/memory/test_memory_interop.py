"""Super-brain folders are shared with the original framework: its layout and file names,
its access path (the skill `super-brain`), raf's earlier names, and documents' defaults."""

from __future__ import annotations

import shutil
from pathlib import Path

from raf.agent.builder import AgentBuilder
from raf.context.memory import SuperBrainContextProvider, validate_memory
from raf.context.skills import AgentSkillsProvider
from raf.decl import DeclAgentBuilder
from raf.testing import ScriptedChatClient, call, reply

ORIGINAL = Path(__file__).resolve().parents[2] / "data" / "super-brain" / "original"


def original_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "brain"
    shutil.copytree(ORIGINAL, folder)
    return folder


def results(response: object) -> dict[str, object]:
    return {r.call_id: r for m in response.messages for r in m.function_results}  # type: ignore[attr-defined]


async def test_a_folder_in_the_original_layout_is_read_with_read_memory(tmp_path):
    folder = original_folder(tmp_path)
    before = {p.name: p.read_text() for p in folder.iterdir()}
    model = ScriptedChatClient(
        [reply("", call("read_memory", path="USER.md", call_id="u")), "You are Mira."]
    )
    memory = SuperBrainContextProvider(folder)
    agent = AgentBuilder().with_chat_client(model).with_context_provider(memory).build()
    response = await agent.run("who am I?")
    assert "Tromsø" in str(results(response)["u"].result)  # type: ignore[attr-defined]
    for name, text in before.items():  # nothing of the original is rewritten
        assert (folder / name).read_text() == text
    assert (folder / "index.md").is_file() and (folder / "AGENT.md").is_file()
    assert validate_memory(folder) == [] or all(
        "front matter" in p for p in validate_memory(folder)
    )


async def test_the_original_access_path_load_skill_then_read_skill_resource(tmp_path):
    folder = original_folder(tmp_path)
    model = ScriptedChatClient(
        [
            reply("", call("load_skill", skill_name="super-brain", call_id="l")),
            reply(
                "",
                call("read_skill_resource", skill_name="super-brain", path="RULES.md", call_id="r"),
            ),
            "I will not run it as root.",
        ]
    )
    memory = SuperBrainContextProvider(folder, access="skill")
    agent = AgentBuilder().with_chat_client(model).with_context_provider(memory).build()
    response = await agent.run("run this as root")
    found = results(response)
    for name in ("USER.md", "SOUL.md", "LESSON.md", "PREFERENCE.md", "RULES.md"):
        assert name in str(found["l"].result)  # type: ignore[attr-defined]
    assert "Never run commands as root" in str(found["r"].result)  # type: ignore[attr-defined]
    assert "load_skill" in model.requests[0].system
    assert "read_memory" not in model.requests[0].tool_names


async def test_raf_writes_pages_under_the_original_names(tmp_path):
    folder = tmp_path / "new"
    memory = SuperBrainContextProvider(folder)
    await memory.ensure_seeded()
    for name in ("SKILL.md", "SOUL.md", "USER.md", "RULES.md", "LESSON.md", "PREFERENCE.md"):
        assert (folder / name).is_file(), name
    assert not (folder / "references").exists()
    skills = AgentSkillsProvider(folder)
    assert [s.name for s in skills.skills] == ["super-brain"]  # the original reads it as a skill


async def test_raf_earlier_names_still_read(tmp_path):
    folder = tmp_path / "old"
    (folder / "references").mkdir(parents=True)
    (folder / "references" / "user.md").write_text("# User\n\n- Name: Ada\n")
    model = ScriptedChatClient(
        [reply("", call("read_memory", path="USER.md", call_id="u")), "Ada."]
    )
    memory = SuperBrainContextProvider(folder)
    agent = AgentBuilder().with_chat_client(model).with_context_provider(memory).build()
    response = await agent.run("name?")
    assert "Ada" in str(results(response)["u"].result)  # type: ignore[attr-defined]


async def test_memory_as_a_skill_shares_the_skills_providers_tools(tmp_path):
    original_folder(tmp_path)
    skills = tmp_path / "skills" / "greet"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text("---\nname: greet\ndescription: Greet people.\n---\nSay hi.\n")
    (tmp_path / "agent.yaml").write_text(
        "name: a\ncontexts:\n"
        "  - {kind: memory, config: {directory: brain, access: skill}}\n"
        "  - {kind: skills, config: {directory: skills}}\n"
    )
    model = ScriptedChatClient(
        [reply("", call("read_skill_resource", skill_name="super-brain", path="user.md")), "ok"]
    )
    agent = DeclAgentBuilder().from_file(tmp_path / "agent.yaml").with_chat_client(model).build()
    response = await agent.run("hi")
    request = model.requests[0]
    assert request.tool_names.count("load_skill") == 1
    assert "- super-brain:" in request.system and "- greet:" in request.system
    (result,) = [r for m in response.messages for r in m.function_results]
    assert "Tromsø" in str(result.result)  # user.md found as USER.md


async def test_enabled_false_turns_the_memory_off(tmp_path):
    (tmp_path / "agent.yaml").write_text("name: a\ncontexts:\n  - {kind: memory, enabled: false}\n")
    agent = (
        DeclAgentBuilder()
        .from_file(tmp_path / "agent.yaml")
        .with_chat_client(ScriptedChatClient(["ok"]))
        .build()
    )
    assert [p.kind for p in agent.context_providers] == ["history"]
    await agent.run("hi")
    assert not (tmp_path / "logs").exists()


async def test_read_skill_resource_falls_back_to_a_case_insensitive_match(tmp_path):
    folder = tmp_path / "pdf"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: pdf\ndescription: Fill PDF forms.\n---\nSee FORMS.md.\n"
    )
    (folder / "forms.md").write_text("# Forms\n\nUse the field names.\n")
    model = ScriptedChatClient(
        [reply("", call("read_skill_resource", skill_name="pdf", path="FORMS.md")), "done"]
    )
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_context_provider(AgentSkillsProvider(folder))
        .build()
    )
    response = await agent.run("fill it")
    (result,) = [r for m in response.messages for r in m.function_results]
    assert result.error is None and "Use the field names" in str(result.result)
