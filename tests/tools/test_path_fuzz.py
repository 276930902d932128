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
    "run_command": lambda p: {"command": "cat * 2>/dev/null; true", "cwd": p},
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

    @settings(max_examples=200, deadline=None, database=None)
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
