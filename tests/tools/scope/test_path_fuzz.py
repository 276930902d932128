"""Fuzz (hypothesis) over path strings for every tool that takes a path: built from the
pieces escapes are made of, under deny_outside; whatever the string, the call answers
(never raises), reads nothing outside the root and changes nothing outside it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raf.core.tools import ToolContext, ToolResult
from raf.tools.files import (
    EditFile,
    FindFiles,
    InspectFile,
    ListFiles,
    MakeDirectory,
    MoveFile,
    ReadFile,
    RemovePath,
    RunCommand,
    SearchFile,
    WriteFile,
)
from raf.tools.workspace import WorkspaceScope
from tests.tools.workspace_world import World, build_world

PIECES = [
    "..", ".", "", "~", "sub", "a.txt", "link_out", "link_file", "abs_link", "proc_link",
    "slash", "tricky", "hard.txt", "loop1", "deep", "secret.txt", "nested", "outside",
    "ws", "café.txt", "cafe\u0301.txt", "．．", "\u2025", "..\\..", "%2e%2e", "*", "**",
    "LINK_OUT", "proc", "self", "root", "etc", "passwd", "\x00", "x" * 300, "\u202e..",
]  # fmt: skip

Call = Callable[[str], dict[str, Any]]
CALLS: dict[str, Call] = {
    "read_file": lambda p: {"path": p},
    "write_file": lambda p: {"path": p, "content": "fuzz"},
    "edit_file": lambda p: {"path": p, "old_string": "SENTINEL", "new_string": "gone"},
    "list_files": lambda p: {"path": p},
    "inspect_file": lambda p: {"path": p},
    "make_directory": lambda p: {"path": p},
    "remove_path": lambda p: {"path": p, "recursive": True},
    "move_file": lambda p: {"source": p, "destination": "moved-here"},
    "move_file_to": lambda p: {"source": "a.txt", "destination": p},
    "find_files": lambda p: {"pattern": "*", "path": p},
    "search_file": lambda p: {"pattern": "SENTINEL|secret", "path": p},
    # the outside folder's own files: shown only if the working folder escaped (a hard
    # link already in the workspace is readable by commands: see SECURITY.md)
    "run_command": lambda p: {"command": "cat secret.txt nested/deep.txt; true", "cwd": p},
}
TOOLS: dict[str, type[Any]] = {
    "read_file": ReadFile,
    "write_file": WriteFile,
    "edit_file": EditFile,
    "list_files": ListFiles,
    "inspect_file": InspectFile,
    "make_directory": MakeDirectory,
    "remove_path": RemovePath,
    "move_file": MoveFile,
    "move_file_to": MoveFile,
    "find_files": FindFiles,
    "search_file": SearchFile,
    "run_command": RunCommand,
}


def _paths(world: World) -> st.SearchStrategy[str]:
    anchors = st.sampled_from(
        ["", "/", f"{world.root}/", f"{world.outside}/", f"/proc/self/root{world.root}/", "~/"]
    )
    parts = st.lists(st.sampled_from(PIECES), min_size=1, max_size=6)
    return st.builds(lambda a, ps: a + "/".join(ps), anchors, parts)


@pytest.mark.parametrize("tool_name", sorted(CALLS))
def test_no_path_string_leaves_the_root(tmp_path_factory: pytest.TempPathFactory, tool_name: str):
    world = build_world(tmp_path_factory.mktemp("fuzz"))
    before = world.snapshot()
    scope = WorkspaceScope(world.root, policy="deny")
    tool = TOOLS[tool_name](scope)

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        database=None,
    )
    @given(path=_paths(world))
    def attack(path: str) -> None:
        result: ToolResult = asyncio.run(tool.invoke(CALLS[tool_name](path), ToolContext()))
        shown = json.dumps([result.value, result.error], default=str)
        assert world.sentinel not in shown, (path, shown[:300])
        assert world.snapshot() == before, path

    attack()


def test_the_fuzz_strategy_reaches_outside(tmp_path: Path) -> None:
    """The strategy can spell an escape: an unconfined open of some example leaves the root."""
    world = build_world(tmp_path)
    strategy = _paths(world)
    seen_outside = False

    # Derandomized, so whether the strategy can spell an escape does not depend on luck.
    @settings(max_examples=400, deadline=None, database=None, derandomize=True)
    @given(path=strategy)
    def probe(path: str) -> None:
        nonlocal seen_outside
        if "\x00" in path or len(path) > 1000:
            return
        try:
            target = Path(path if path.startswith("/") else world.root / path).expanduser()
            seen_outside |= world.sentinel in target.read_text()
        except (OSError, UnicodeDecodeError, ValueError):
            pass

    probe()
    assert seen_outside


STORE_CALLS: dict[str, Callable[[str], dict[str, Any]]] = {
    "wiki_read": lambda p: {"page": p},
    "wiki_create": lambda p: {"title": "Fuzz", "body": "x", "space": p},
    "wiki_update": lambda p: {"page": p, "body": "changed"},
    "read_memory": lambda p: {"path": p},
    "write_file": lambda p: {"path": p, "content": "planted"},
    "edit_file": lambda p: {"path": p, "old_text": "SENTINEL", "new_text": "gone"},
    "read_skill_resource": lambda p: {"skill_name": "notes", "path": p},
}


def _store_tools(world: World) -> dict[str, Any]:
    """The model-facing tools of the wiki, memory and skill stores, all rooted in the
    hostile workspace (so its traps lie inside each store's folder)."""
    from raf.context.memory.store import MemoryStore
    from raf.context.memory.tools import curator_tools, reader_tools
    from raf.context.skills import AgentSkillsProvider
    from raf.context.wiki.store import Wiki
    from raf.context.wiki.tools import wiki_tools

    skill = world.root / "skills" / "notes"
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text("---\nname: notes\ndescription: Notes.\n---\nBody.\n")
    (skill / "ref.md").write_text("fine")
    memory = MemoryStore(world.root)
    tools: list[Any] = [
        *wiki_tools(Wiki(world.root)),
        *reader_tools(memory),
        *curator_tools(memory, set()),
        *AgentSkillsProvider(world.root / "skills").tools(),
    ]
    return {t.name: t for t in tools}


@pytest.mark.parametrize("tool_name", sorted(STORE_CALLS))
def test_no_name_leaves_a_store(tmp_path_factory: pytest.TempPathFactory, tool_name: str) -> None:
    from raf.core.errors import ToolExecutionError

    world = build_world(tmp_path_factory.mktemp("fuzz-store"))
    tool = _store_tools(world)[tool_name]
    before = world.snapshot()

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        database=None,
    )
    @given(path=_paths(world))
    def attack(path: str) -> None:
        try:
            result = asyncio.run(
                asyncio.wait_for(tool.invoke(STORE_CALLS[tool_name](path), ToolContext()), 10)
            )
            shown = json.dumps([result.value, result.error], default=str)
        except ToolExecutionError as exc:  # the tool loop answers the model with it
            shown = str(exc)
        assert world.sentinel not in shown, (path, shown[:300])
        assert world.snapshot() == before, path

    attack()
