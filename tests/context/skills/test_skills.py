"""AgentSkillsProvider: advertising, loading on request, resources, scripts, safety."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from raf.agent.builder import AgentBuilder
from raf.context.skills import (
    AgentSkillsProvider,
    CodeInterpreterRunner,
    ScriptResult,
    Skill,
    load_skills,
)
from raf.context.skills.model import parse_yaml_mapping
from raf.core.errors import ConfigurationError, MissingExtraError, ToolExecutionError
from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions
from raf.core.sessions import AgentSession
from raf.core.tools import ToolContext, ToolResult
from raf.testing import ScriptedChatClient, call, reply

REPO = Path(__file__).resolve().parents[3]
LOCAL_SKILLS = REPO / "tests" / "data" / "agent-skills"
REAL_NAMES = {"brand-guidelines", "frontend-design", "internal-comms", "mcp-builder"}


def skill_sources() -> list[Path]:
    """The committed copy always; the shared originals too when they sit beside the repo."""
    sources = [LOCAL_SKILLS]
    for outside in (
        REPO.parent / "shared" / "data" / "agent-skills",
        Path("/work/shared/data/agent-skills"),
    ):
        if outside.is_dir() and outside.resolve() not in [s.resolve() for s in sources]:
            sources.append(outside)
    return sources


def write_skill(root: Path, folder: str, front: str, body: str = "Body text.") -> Path:
    path = root / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / "SKILL.md").write_text(f"---\n{front}\n---\n{body}\n", encoding="utf-8")
    return path


async def invoke(provider: AgentSkillsProvider, tool_name: str, **arguments: object):
    """Call an injected tool as the tool loop does: a raised ToolExecutionError is an
    error result."""
    tools = {t.name: t for t in provider.tools()}
    try:
        return await tools[tool_name].invoke(arguments, ToolContext())
    except ToolExecutionError as exc:
        return ToolResult.fail(str(exc))


@pytest.mark.parametrize("source", skill_sources(), ids=str)
def test_the_four_real_skills_load_as_they_are(source: Path) -> None:
    skills, warnings = load_skills(source)
    assert {s.name for s in skills} == REAL_NAMES
    assert warnings == []
    by_name = {s.name: s for s in skills}
    assert "reference/evaluation.md" in by_name["mcp-builder"].files
    assert "examples/faq-answers.md" in by_name["internal-comms"].files
    assert by_name["brand-guidelines"].license == "Complete terms in LICENSE.txt"
    assert all(len(s.description) <= 1024 for s in skills)
    assert by_name["mcp-builder"].instructions.startswith("# MCP Server Development Guide")


async def test_advertises_names_and_descriptions_never_bodies() -> None:
    provider = AgentSkillsProvider(LOCAL_SKILLS)
    result = await provider.on_invoking(None, AgentSession(), [], AgentRunOptions())
    assert result.instructions is not None
    for skill in provider.skills:
        assert skill.name in result.instructions
        assert skill.instructions[200:400] not in result.instructions
    assert {t.name for t in result.tools} == {"load_skill", "read_skill_resource"}


async def test_skill_is_loaded_on_request_and_not_before() -> None:
    model = ScriptedChatClient(
        [reply("", call("load_skill", skill_name="mcp-builder", call_id="c1")), "Loaded."]
    )
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_context_provider(AgentSkillsProvider(LOCAL_SKILLS))
        .build()
    )
    response = await agent.run("Build an MCP server for GitHub")
    assert response.text == "Loaded."
    body_marker = "MCP Server Development Guide"
    first, second = model.requests
    assert all(body_marker not in m.text for m in first.messages)
    assert "mcp-builder" in first.system
    results = [r for m in second.messages for r in m.function_results]
    assert len(results) == 1 and body_marker in results[0].as_text()
    assert "reference/python_mcp_server.md" in results[0].as_text()


async def test_read_skill_resource_only_when_some_skill_has_resources(tmp_path: Path) -> None:
    write_skill(tmp_path / "bare", "plain", "name: plain\ndescription: A skill alone.")
    bare = AgentSkillsProvider(tmp_path / "bare")
    assert [t.name for t in bare.tools()] == ["load_skill"]
    code_only = AgentSkillsProvider(skills=[Skill(name="inline", description="In code.")])
    assert [t.name for t in code_only.tools()] == ["load_skill"]
    with_files = AgentSkillsProvider(LOCAL_SKILLS)
    assert "read_skill_resource" in [t.name for t in with_files.tools()]


async def test_resources_are_read_from_any_subfolder() -> None:
    provider = AgentSkillsProvider(LOCAL_SKILLS)
    result = await invoke(
        provider, "read_skill_resource", skill_name="mcp-builder", path="reference/evaluation.md"
    )
    assert result.error is None
    expected = (LOCAL_SKILLS / "mcp-builder" / "reference" / "evaluation.md").read_text()
    assert result.value == expected
    example = await invoke(
        provider,
        "read_skill_resource",
        skill_name="internal-comms",
        path="./examples//faq-answers.md",
    )
    assert example.error is None and len(example.value) > 100


async def test_unknown_skill_lists_the_available_ones() -> None:
    provider = AgentSkillsProvider(LOCAL_SKILLS)
    result = await invoke(provider, "load_skill", skill_name="cooking")
    assert result.error is not None
    assert "unknown skill 'cooking'" in result.error
    for name in REAL_NAMES:
        assert name in result.error


async def test_no_resource_read_leaves_the_skill_folder(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    folder = write_skill(tmp_path / "skills", "safe", "name: safe\ndescription: Safe skill.")
    (folder / "notes").mkdir()
    (folder / "notes" / "a.md").write_text("inside")
    (folder / "escape.txt").symlink_to(secret)
    (folder / "inner-link.md").symlink_to(folder / "notes" / "a.md")
    (folder / "outdir").symlink_to(tmp_path, target_is_directory=True)
    provider = AgentSkillsProvider(tmp_path / "skills")
    skill = provider.get("safe")
    assert "escape.txt" not in skill.files
    assert "inner-link.md" in skill.files
    assert not any(f.startswith("outdir") for f in skill.files)
    assert any("outside the skill folder" in w for w in provider.warnings)
    for bad in (
        "../secret.txt",
        "notes/../../secret.txt",
        str(secret),
        "escape.txt",
        "outdir/secret.txt",
        "~/x",
    ):
        result = await invoke(provider, "read_skill_resource", skill_name="safe", path=bad)
        assert result.error is not None, bad
        assert "top secret" not in str(result.value)
    ok = await invoke(provider, "read_skill_resource", skill_name="safe", path="inner-link.md")
    assert ok.value == "inside"


def test_malformed_skills_are_skipped_with_clear_warnings(tmp_path: Path, caplog) -> None:
    root = tmp_path / "skills"
    write_skill(root, "good", "name: good\ndescription: Fine.")
    (root / "nofront").mkdir()
    (root / "nofront" / "SKILL.md").write_text("# just markdown\n")
    write_skill(root, "badyaml", "name: [unclosed\ndescription: x")
    write_skill(root, "Bad_Name", "name: Bad_Name\ndescription: Upper case.")
    write_skill(root, "long", f"name: long\ndescription: {'x' * 1025}")
    write_skill(root, "nodesc", "name: nodesc")
    write_skill(root, "renamed", "name: other-name\ndescription: Folder differs.\nextra: 1")
    (root / "empty-folder").mkdir()
    with caplog.at_level("WARNING", logger="raf.context.skills"):
        provider = AgentSkillsProvider(root)
    assert sorted(s.name for s in provider.skills) == ["good", "other-name"]
    text = "\n".join(provider.warnings)
    assert "nofront/SKILL.md: no YAML front matter" in text
    assert "badyaml/SKILL.md: the front matter is not valid YAML" in text
    assert "'name' 'Bad_Name' must use lowercase" in text
    assert "'description' is 1025 characters long; the limit is 1024" in text
    assert "nodesc/SKILL.md: 'description' is missing" in text
    assert "differs from its folder name 'renamed'" in text
    assert "unknown front-matter keys ignored: extra" in text
    assert "empty-folder: no SKILL.md" in text
    assert "skill skipped" in caplog.text


def test_a_single_skill_folder_and_a_missing_directory(tmp_path: Path) -> None:
    provider = AgentSkillsProvider([LOCAL_SKILLS / "brand-guidelines", tmp_path / "missing"])
    assert [s.name for s in provider.skills] == ["brand-guidelines"]
    assert any("does not exist" in w for w in provider.warnings)


def test_duplicate_names_keep_the_first(tmp_path: Path) -> None:
    write_skill(tmp_path, "brand-guidelines", "name: brand-guidelines\ndescription: Copy.")
    provider = AgentSkillsProvider([LOCAL_SKILLS, tmp_path])
    assert provider.get("brand-guidelines").path == LOCAL_SKILLS / "brand-guidelines"
    assert any("already loaded" in w for w in provider.warnings)


async def test_dynamic_skills_built_in_code() -> None:
    skill = Skill(
        name="refunds",
        description="How to process a refund.",
        instructions="Check the order, then refund.",
        resources={"policy/limits.md": "Refunds above 500 EUR need a manager."},
    )
    provider = AgentSkillsProvider(skills=[skill])
    loaded = await invoke(provider, "load_skill", skill_name="refunds")
    assert "Check the order" in loaded.value and "policy/limits.md" in loaded.value
    text = await invoke(
        provider, "read_skill_resource", skill_name="refunds", path="policy/limits.md"
    )
    assert text.value == "Refunds above 500 EUR need a manager."
    missing = await invoke(provider, "read_skill_resource", skill_name="refunds", path="x.md")
    assert missing.error is not None and "policy/limits.md" in missing.error
    with pytest.raises(ConfigurationError, match="lowercase"):
        Skill(name="Refunds", description="x")
    with pytest.raises(ConfigurationError, match="description"):
        Skill(name="refunds", description="")


def test_yaml_extra_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)
    with pytest.raises(MissingExtraError, match=r"the 'yaml' extra.*\[yaml\]"):
        parse_yaml_mapping("name: x", "SKILL.md")


class SubprocessRunner:
    """A real runner for tests: the script in a child process, with a timeout."""

    def __init__(self) -> None:
        self.calls: list[tuple[Path, list[str], Path]] = []

    async def run_script(
        self, script: Path, args: Sequence[str], *, cwd: Path, time_limit: float
    ) -> ScriptResult:
        self.calls.append((script, list(args), cwd))
        command = [sys.executable] if script.suffix == ".py" else ["bash"]
        process = await asyncio.create_subprocess_exec(
            *command,
            str(script),
            *args,
            cwd=cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), time_limit)
        return ScriptResult(
            exit_code=process.returncode or 0, stdout=out.decode(), stderr=err.decode()
        )


async def test_run_skill_script_needs_scripts_and_a_runner(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "greeter", "name: greeter\ndescription: Greets.")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "hello.py").write_text("import sys\nprint('hello', *sys.argv[1:])\n")
    tool_py = folder / "tool.sh"
    tool_py.write_text("echo shell\n")
    os.chmod(tool_py, 0o755)
    (folder / "data.py").write_text("x = 1\n")
    without_runner = AgentSkillsProvider(tmp_path)
    assert "run_skill_script" not in [t.name for t in without_runner.tools()]
    assert without_runner.get("greeter").scripts == ["scripts/hello.py", "tool.sh"]
    runner = SubprocessRunner()
    provider = AgentSkillsProvider(tmp_path, script_runner=runner)
    assert "run_skill_script" in [t.name for t in provider.tools()]
    loaded = await invoke(provider, "load_skill", skill_name="greeter")
    assert "Scripts (run with run_skill_script): scripts/hello.py, tool.sh" in loaded.value
    result = await invoke(
        provider, "run_skill_script", skill_name="greeter", script="scripts/hello.py", args=["Ada"]
    )
    assert result.error is None
    assert result.value["stdout"].strip() == "hello Ada" and result.value["exit_code"] == 0
    assert runner.calls[0][2] == folder.resolve()
    refused = await invoke(
        provider, "run_skill_script", skill_name="greeter", script="data.py", args=[]
    )
    assert refused.error is not None and "scripts/hello.py" in refused.error
    assert len(runner.calls) == 1
    only_plain = AgentSkillsProvider(LOCAL_SKILLS, script_runner=runner)
    assert "run_skill_script" not in [t.name for t in only_plain.tools()]


async def test_provider_without_skills_adds_nothing(tmp_path: Path) -> None:
    provider = AgentSkillsProvider(tmp_path)
    result = await provider.on_invoking(
        None, AgentSession(), [ChatMessage.user("x")], AgentRunOptions()
    )
    assert result.instructions is None and result.tools == []
    assert provider.kind == "skills" and provider.name == "skills"


async def test_scripts_run_in_the_code_interpreter_sandbox(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "counter", "name: counter\ndescription: Counts words.")
    (folder / "data").mkdir()
    (folder / "data" / "words.txt").write_text("alpha beta gamma\n")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "count.py").write_text(
        "import sys\n"
        "words = open('data/words.txt').read().split()\n"
        "print(len(words), sys.argv[1])\n"
        "sys.exit(3)\n"
    )
    provider = AgentSkillsProvider(tmp_path, script_runner=CodeInterpreterRunner())
    result = await invoke(
        provider, "run_skill_script", skill_name="counter", script="scripts/count.py", args=["ok"]
    )
    assert result.error is None, result.error
    assert result.value["stdout"].strip() == "3 ok"
    assert result.value["exit_code"] == 3 and result.value["timed_out"] is False


def test_a_byte_order_mark_before_the_front_matter_is_allowed(tmp_path: Path) -> None:
    folder = tmp_path / "bom-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_bytes(
        b"\xef\xbb\xbf---\r\nname: bom-skill\r\n"
        b"description: Saved by a Windows editor.\r\n---\r\nBody\r\n"
    )
    provider = AgentSkillsProvider(tmp_path)
    assert provider.warnings == []
    assert provider.get("bom-skill").description == "Saved by a Windows editor."


async def test_a_resource_gone_from_disk_is_a_clear_tool_error(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "notes", "name: notes\ndescription: Notes.")
    (folder / "ref.md").write_text("hello")
    provider = AgentSkillsProvider(tmp_path)
    (folder / "ref.md").unlink()
    result = await invoke(provider, "read_skill_resource", skill_name="notes", path="ref.md")
    assert result.is_error
    assert "resource 'ref.md' of skill 'notes' cannot be read (No such file" in str(result.error)


def test_wrong_argument_types_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="a path or a list of paths"):
        AgentSkillsProvider(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="takes Skill objects"):
        AgentSkillsProvider(skills=[{"name": "x"}])  # type: ignore[list-item]
