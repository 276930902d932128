"""The hostile corpus: >100 escape attempts against every scope tool under DENY_OUTSIDE and
(unapproved) APPROVE_OUTSIDE; not one byte outside the root is read or written."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from raf.core.tools import ToolContext
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
from raf.tools.workspace import ScopePolicy, WorkspaceScope
from tests.tools.workspace_world import World, build_world, hostile_paths

_COUNT_WORLD = Path("/nonexistent-world-for-ids")


def _ids() -> list[str]:
    fake = World(
        base=_COUNT_WORLD, root=_COUNT_WORLD / "ws", outside=_COUNT_WORLD / "outside", sentinel=""
    )
    return [repr(p)[:60] for p in hostile_paths(fake)]


INDEXES = list(range(len(_ids())))


def _kernel_escapes(world: World, path: str) -> bool:
    """Whether the kernel's own resolution of `path` (from the root) lands outside it."""
    if "\x00" in path or len(path) > 4000 or "\ud800" in path:
        return False
    text = os.path.expanduser(path) if path.startswith("~") else path
    joined = os.path.join(world.root, text)
    real = _kernel_resolve(joined)
    if real is None:
        head, tail = os.path.split(joined.rstrip("/"))
        parent = _kernel_resolve(head)
        if parent is None:
            return False  # the kernel cannot reach it either
        real = os.path.join(parent, tail)
    root = str(world.root)
    inside = real == root or real.startswith(root + "/")
    return not inside


def _kernel_resolve(path: str) -> str | None:
    """Where the kernel itself lands for `path` (O_PATH open, then /proc/self/fd)."""
    try:
        fd = os.open(path, os.O_PATH)
    except (OSError, ValueError):
        return None
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)


def _calls(path: str) -> list[tuple[Any, dict[str, Any]]]:
    return [
        (ReadFile, {"path": path}),
        (ReadFile, {"path": path, "start_line": 1, "end_line": 3}),
        (ListFiles, {"path": path}),
        (InspectFile, {"path": path}),
        (SearchFile, {"pattern": "SENTINEL", "path": path}),
        (SearchFile, {"pattern": "SENTINEL", "path": path, "_python": True}),
        (FindFiles, {"pattern": "*", "path": path}),
        (FindFiles, {"pattern": "**/secret.txt", "path": path}),
        (EditFile, {"path": path, "old_string": "SENTINEL", "new_string": "pwned"}),
        (WriteFile, {"path": path, "content": "pwned"}),
        (MakeDirectory, {"path": path}),
        (MoveFile, {"source": "a.txt", "destination": path}),
        (MoveFile, {"source": path, "destination": "moved_in"}),
        (
            RunCommand,
            {"command": "cat secret.txt nested/deep.txt; echo pwned > pwned.txt", "cwd": path},
        ),
        (RemovePath, {"path": path, "recursive": True}),
    ]


async def _attack(world: World, scope: WorkspaceScope, path: str) -> list[tuple[str, Any]]:
    results: list[tuple[str, Any]] = []
    for cls, args in _calls(path):
        args = dict(args)
        python = args.pop("_python", False)
        tool = SearchFile(scope, use_ripgrep=False) if python else cls(scope)
        result = await tool.invoke(args, ToolContext(call_id="c1"))
        results.append((f"{tool.name}{' (python)' if python else ''}", result))
    return results


@pytest.mark.parametrize("policy", [ScopePolicy.DENY_OUTSIDE, ScopePolicy.APPROVE_OUTSIDE])
@pytest.mark.parametrize("index", INDEXES, ids=_ids())
async def test_escape_attempt_is_contained(tmp_path: Path, index: int, policy: ScopePolicy):
    world = build_world(tmp_path)
    path = hostile_paths(world)[index]
    before = world.snapshot()
    scope = WorkspaceScope(world.root, policy=policy)
    hard_link = path in ("hard.txt", f"{world.root}/hard.txt")
    escapes = _kernel_escapes(world, path) or hard_link
    if escapes and policy is ScopePolicy.APPROVE_OUTSIDE and "\ud800" not in path:
        assert ReadFile(scope).approval_required({"path": path}), path
    results = await _attack(world, scope, path)
    for name, result in results:
        text = json.dumps({"v": result.value, "e": result.error}, default=str)
        assert world.sentinel not in text, f"{name} leaked outside content for {path!r}: {text}"
        # write_file replaces a hard-linked name atomically: the outside inode is untouched
        must_refuse: tuple[str, ...] = ("read_file", "edit_file", "inspect_file")
        if not hard_link:
            must_refuse += ("write_file",)
        if escapes and name.startswith(must_refuse):
            assert result.is_error, f"{name} accepted escaping path {path!r}: {text}"
            assert "OutsideScope" in (result.error or ""), (name, path, result.error)
    assert world.snapshot() == before, f"something outside the root changed for {path!r}"
    assert not any(world.outside.rglob("pwned*"))
    moved = world.root / "moved_in"
    if moved.is_file() and not moved.is_symlink():
        assert world.sentinel not in moved.read_text(errors="replace")


async def test_corpus_is_large_enough(tmp_path: Path):
    assert len(hostile_paths(build_world(tmp_path))) >= 100


@pytest.mark.parametrize(
    "pattern",
    ["../*", "../outside/*", "/etc/*", "~/*", "**/../../outside/*", "sub/../../*", "a\x00"],
)
async def test_find_files_globs_cannot_climb_out(tmp_path: Path, pattern: str):
    world = build_world(tmp_path)
    scope = WorkspaceScope(world.root, policy=ScopePolicy.ALLOW_ALL)
    result = await FindFiles(scope).invoke({"pattern": pattern}, ToolContext())
    assert result.is_error
    error = result.error or ""
    assert "climb" in error or "relative" in error or "NUL" in error


@pytest.mark.parametrize("use_ripgrep", [True, False])
async def test_search_never_follows_symlinks_out(tmp_path: Path, use_ripgrep: bool):
    world = build_world(tmp_path)
    scope = WorkspaceScope(world.root, policy=ScopePolicy.DENY_OUTSIDE)
    tool = SearchFile(scope, use_ripgrep=use_ripgrep)
    result = await tool.invoke({"pattern": "SENTINEL|inside"}, ToolContext())
    assert not result.is_error, result.error
    paths = {m["path"] for m in result.value["matches"]}
    assert paths == {"a.txt", "sub/b.txt"}
    assert world.sentinel not in json.dumps(result.value)
    assert any("hard.txt" in s for s in result.value.get("skipped", []))


async def test_symlink_swapped_between_check_and_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The check sees a plain folder; just before the file is opened it becomes a symlink
    to the outside. The fd walk refuses instead of following it."""
    world = build_world(tmp_path)
    (world.root / "swap").mkdir()
    (world.root / "swap" / "secret.txt").write_text("harmless\n")
    scope = WorkspaceScope(world.root, policy=ScopePolicy.DENY_OUTSIDE)
    original = WorkspaceScope.decide

    def decide_then_swap(
        self: WorkspaceScope, path: Any, access: Any, *, follow_final: bool = True
    ) -> Any:
        decision = original(self, path, access, follow_final=follow_final)
        if str(path).startswith("swap"):
            os.rename(world.root / "swap", world.root / "swap_old")
            os.symlink(str(world.outside), world.root / "swap")
        return decision

    monkeypatch.setattr(WorkspaceScope, "decide", decide_then_swap)
    result = await ReadFile(scope).invoke({"path": "swap/secret.txt"}, ToolContext())
    assert result.is_error
    assert "OutsideScope" in (result.error or "")
    assert world.sentinel not in (result.error or "")


async def test_file_swapped_for_symlink_after_walk_is_not_followed(tmp_path: Path, monkeypatch):
    """The final name becomes a symlink after the walk: O_NOFOLLOW refuses to open it."""
    world = build_world(tmp_path)
    scope = WorkspaceScope(world.root, policy=ScopePolicy.DENY_OUTSIDE)
    import raf.tools.scope.locate as locate_mod

    real_locate = locate_mod.locate

    def locate_then_swap(*args: Any, **kwargs: Any) -> Any:
        loc = real_locate(*args, **kwargs)
        os.unlink(world.root / "a.txt")
        os.symlink(str(world.outside / "secret.txt"), world.root / "a.txt")
        return loc

    monkeypatch.setattr(locate_mod, "locate", locate_then_swap)
    result = await ReadFile(scope).invoke({"path": "a.txt"}, ToolContext())
    assert result.is_error
    assert world.sentinel not in (result.error or "")


async def test_symlinked_root_keeps_inside_paths_inside(tmp_path: Path):
    world = build_world(tmp_path)
    scope = WorkspaceScope(world.base / "rootlink", policy=ScopePolicy.DENY_OUTSIDE)
    inside = await ReadFile(scope).invoke({"path": f"{world.base}/rootlink/a.txt"}, ToolContext())
    assert inside.value["content"].startswith("alpha")
    also = await ReadFile(scope).invoke({"path": f"{world.root}/sub/b.txt"}, ToolContext())
    assert also.value["content"].startswith("bravo")
    out = await ReadFile(scope).invoke({"path": "link_out/secret.txt"}, ToolContext())
    assert out.is_error


async def test_allow_all_reaches_outside(tmp_path: Path):
    world = build_world(tmp_path)
    scope = WorkspaceScope(world.root, policy=ScopePolicy.ALLOW_ALL)
    result = await ReadFile(scope).invoke({"path": "link_out/secret.txt"}, ToolContext())
    assert world.sentinel in result.value["content"]
    hard = await ReadFile(scope).invoke({"path": "hard.txt"}, ToolContext())
    assert world.sentinel in hard.value["content"]


async def test_swap_to_a_denied_inside_target_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A rule was judged for the old target; a swap to a denied file inside is refused."""
    root = tmp_path / "ws"
    (root / "public").mkdir(parents=True)
    (root / "secrets").mkdir()
    (root / "public" / "x.txt").write_text("public\n")
    (root / "secrets" / "key.txt").write_text("TOP-SECRET\n")
    os.symlink("public/x.txt", root / "link")
    scope = WorkspaceScope(root, policy="deny", rules=[{"path": "secrets/**", "read": "deny"}])
    assert not (await ReadFile(scope).invoke({"path": "link"}, ToolContext())).is_error
    original = WorkspaceScope.decide

    def decide_then_swap(
        self: WorkspaceScope, path: Any, access: Any, *, follow_final: bool = True
    ) -> Any:
        decision = original(self, path, access, follow_final=follow_final)
        os.unlink(root / "link")
        os.symlink("secrets/key.txt", root / "link")
        return decision

    monkeypatch.setattr(WorkspaceScope, "decide", decide_then_swap)
    result = await ReadFile(scope).invoke({"path": "link"}, ToolContext())
    assert "changed during the call" in (result.error or "")
    assert "TOP-SECRET" not in str(result.value)


@pytest.mark.parametrize("index", INDEXES, ids=_ids())
async def test_allow_all_read_only_tools_answer_every_attempt(tmp_path: Path, index: int):
    """Under allow_all outside paths are allowed by definition; malformed paths are still
    refused and nothing raises through (read-only tools only: never delete under allow)."""
    world = build_world(tmp_path)
    path = hostile_paths(world)[index]
    before = world.snapshot()
    scope = WorkspaceScope(world.root, policy=ScopePolicy.ALLOW_ALL)
    malformed = scope.resolve_safe(path).error
    for cls in (ReadFile, ListFiles, InspectFile):
        result = await cls(scope).invoke({"path": path}, ToolContext())
        if malformed:
            assert result.is_error, (cls.name, path)
    assert world.snapshot() == before


async def test_ripgrep_output_is_never_trusted_for_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """ripgrep opens paths (following symlinks) after listing them, so a folder swapped for
    a symlink mid-search makes it read outside files. A stand-in rg prints what such a race
    yields; search_file must return only bytes it read itself through the safe walk."""
    world = build_world(tmp_path)
    (world.outside / "deep").mkdir(exist_ok=True)
    (world.outside / "deep" / "secret.txt").write_text(f"{world.sentinel}\n")
    os.symlink(world.outside / "deep", world.root / "swapped")
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    fake = bin_dir / "rg"
    lines = [
        f"swapped/secret.txt\\0001:{world.sentinel}",  # read through the swapped folder
        f"a.txt\\0001:{world.sentinel}",  # a.txt was a symlink out while rg read it
        "sub/b.txt\\0001:bravo inside",  # a true match is still reported
    ]
    fake.write_text("#!/bin/sh\n" + "".join(f"printf '{line}\\n'\n" for line in lines))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', '')}")
    scope = WorkspaceScope(world.root, policy=ScopePolicy.DENY_OUTSIDE)
    result = await SearchFile(scope, use_ripgrep=True).invoke(
        {"pattern": "SENTINEL|inside"}, ToolContext()
    )
    assert not result.is_error, result.error
    assert world.sentinel not in json.dumps(result.value)
    assert result.value["matches"] == [{"path": "sub/b.txt", "line": 1, "text": "bravo inside"}]
