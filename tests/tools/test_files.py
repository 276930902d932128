"""The file tools doing their ordinary work inside a workspace."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

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
    SearchFile,
    WriteFile,
)
from raf.tools.scope.scoped_tool import FileLimits
from raf.tools.workspace import WorkspaceScope
from tests.tools.bounded import run_bounded


@pytest.fixture
def scope(tmp_path: Path) -> WorkspaceScope:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "lines.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("def main():\n    return 42\n")
    (root / "bin.dat").write_bytes(b"\x00\x01\x02binary")
    return WorkspaceScope(root, policy="deny")


async def run(tool: Any, **args: Any) -> ToolResult:
    result: ToolResult = await tool.invoke(args, ToolContext())
    return result


async def test_read_file_ranges(scope: WorkspaceScope):
    whole = await run(ReadFile(scope), path="lines.txt")
    assert whole.value["content"].count("\n") == 100
    part = await run(ReadFile(scope), path="lines.txt", start_line=10, end_line=12)
    assert part.value["content"] == "line 10\nline 11\nline 12\n"
    assert part.value["end_line"] == 12
    tail = await run(ReadFile(scope), path="lines.txt", start_line=99)
    assert tail.value["content"] == "line 99\nline 100\n" and "note" not in tail.value
    beyond = await run(ReadFile(scope), path="lines.txt", start_line=500)
    assert beyond.value["content"] == ""


async def test_read_file_caps(scope: WorkspaceScope):
    limited = ReadFile(scope, limits=FileLimits(max_read_lines=5, max_read_bytes=1000))
    result = await run(limited, path="lines.txt")
    assert result.value["content"].count("\n") == 5
    assert "start_line=6" in result.value["note"]
    tiny = ReadFile(scope, limits=FileLimits(max_read_bytes=20))
    cut = await run(tiny, path="lines.txt")
    assert len(cut.value["content"]) == 20 and "cut at 20 bytes" in cut.value["note"]


async def test_read_file_last_line_without_newline(scope: WorkspaceScope):
    (scope.real_root / "n.txt").write_text("a\nb")
    result = await run(ReadFile(scope), path="n.txt", start_line=2)
    assert result.value["content"] == "b" and result.value["end_line"] == 2


async def test_read_file_refuses_binary_and_folders(scope: WorkspaceScope):
    assert "binary" in ((await run(ReadFile(scope), path="bin.dat")).error or "")
    assert (await run(ReadFile(scope), path="src")).is_error
    assert "No such file" in ((await run(ReadFile(scope), path="missing.txt")).error or "")


async def test_read_file_refuses_fifo_without_blocking(scope: WorkspaceScope):
    os.mkfifo(scope.real_root / "pipe")
    result = await run(ReadFile(scope), path="pipe")
    assert result.is_error and "regular file" in (result.error or "")


async def test_write_and_edit(scope: WorkspaceScope):
    created = await run(WriteFile(scope), path="new/deep/a.txt", content="one two two\n")
    assert created.value.startswith("created")
    assert (scope.real_root / "new/deep/a.txt").read_text() == "one two two\n"
    none = await run(EditFile(scope), path="new/deep/a.txt", old_string="three", new_string="x")
    assert "not found" in (none.error or "")
    many = await run(EditFile(scope), path="new/deep/a.txt", old_string="two", new_string="x")
    assert "occurs 2 times" in (many.error or "")
    one = await run(EditFile(scope), path="new/deep/a.txt", old_string="one", new_string="1")
    assert not one.is_error
    every = await run(
        EditFile(scope), path="new/deep/a.txt", old_string="two", new_string="2", replace_all=True
    )
    assert "2 occurrence" in every.value
    assert (scope.real_root / "new/deep/a.txt").read_text() == "1 2 2\n"
    replaced = await run(WriteFile(scope), path="new/deep/a.txt", content="z")
    assert replaced.value.startswith("replaced")


async def test_write_keeps_mode_and_leaves_no_temp_files(scope: WorkspaceScope):
    target = scope.real_root / "script.sh"
    target.write_text("#!/bin/sh\n")
    target.chmod(0o755)
    await run(WriteFile(scope), path="script.sh", content="#!/bin/sh\necho hi\n")
    assert target.stat().st_mode & 0o777 == 0o755
    assert not [p for p in scope.real_root.iterdir() if ".raf-" in p.name]


async def test_write_through_inside_symlink_writes_its_target(scope: WorkspaceScope):
    os.symlink("src/main.py", scope.real_root / "alias.py")
    await run(WriteFile(scope), path="alias.py", content="print(1)\n")
    assert (scope.real_root / "src/main.py").read_text() == "print(1)\n"


async def test_write_size_cap(scope: WorkspaceScope):
    tool = WriteFile(scope, limits=FileLimits(max_write_bytes=10))
    assert "limit is 10" in ((await run(tool, path="x", content="x" * 11)).error or "")


async def test_list_inspect_mkdir(scope: WorkspaceScope):
    listed = await run(ListFiles(scope))
    names = [e["name"] for e in listed.value["entries"]]
    assert names == ["bin.dat", "lines.txt", "src/"]
    info = await run(InspectFile(scope), path="lines.txt")
    assert info.value["lines"] == 100 and info.value["encoding"] == "ascii"
    assert info.value["type"] == "text file"
    assert (await run(InspectFile(scope), path="bin.dat")).value["type"] == "binary file"
    assert (await run(InspectFile(scope), path="src")).value == {
        "path": "src",
        "type": "folder",
        "entries": 1,
    }
    made = await run(MakeDirectory(scope), path="a/b/c")
    assert made.value == "created a/b/c"
    assert (await run(MakeDirectory(scope), path="a/b/c")).value == "a/b/c already exists"
    limited = await run(ListFiles(scope, limits=FileLimits(max_entries=1)))
    assert "showing 1 of 4" in limited.value["note"]


async def test_remove_and_move(scope: WorkspaceScope):
    moved = await run(MoveFile(scope), source="lines.txt", destination="archive/lines.txt")
    assert moved.value == "moved lines.txt to archive/lines.txt"
    exists = await run(MoveFile(scope), source="src/main.py", destination="archive/lines.txt")
    assert "set overwrite" in (exists.error or "")
    assert (await run(RemovePath(scope), path="archive")).is_error  # not empty
    removed = await run(RemovePath(scope), path="archive", recursive=True)
    assert removed.value == "removed folder archive"
    assert "workspace root" in ((await run(RemovePath(scope), path=".")).error or "")


async def test_find_files(scope: WorkspaceScope):
    (scope.real_root / "src" / "pkg").mkdir()
    (scope.real_root / "src" / "pkg" / "mod.py").write_text("")
    (scope.real_root / ".git").mkdir()
    (scope.real_root / ".git" / "x.py").write_text("")
    found = await run(FindFiles(scope), pattern="*.py")
    assert found.value["matches"] == ["src/main.py", "src/pkg/mod.py"]
    rooted = await run(FindFiles(scope), pattern="src/*.py")
    assert rooted.value["matches"] == ["src/main.py"]
    folders = await run(FindFiles(scope), pattern="pkg")
    assert folders.value["matches"] == ["src/pkg/"]
    below = await run(FindFiles(scope), pattern="*.py", path="src/pkg")
    assert below.value["matches"] == ["mod.py"]


@pytest.mark.parametrize("use_ripgrep", [True, False])
async def test_search_file(scope: WorkspaceScope, use_ripgrep: bool):
    tool = SearchFile(scope, use_ripgrep=use_ripgrep)
    result = await run(tool, pattern=r"line 1\d$")
    assert [m["line"] for m in result.value["matches"]] == list(range(10, 20))
    assert result.value["backend"] == ("ripgrep" if use_ripgrep else "python")
    one = await run(tool, pattern="RETURN", ignore_case=True, glob="*.py")
    assert one.value["matches"] == [{"path": "src/main.py", "line": 2, "text": "    return 42"}]
    capped = await run(tool, pattern="line", max_matches=3)
    assert len(capped.value["matches"]) == 3 and "stopped at 3" in capped.value["note"]
    assert (await run(tool, pattern="binary")).value["matches"] == []
    single = await run(tool, pattern="main", path="src/main.py")
    assert single.value["matches"][0]["path"] == "src/main.py"
    bad = await run(tool, pattern="(unclosed")
    assert "invalid regular expression" in (bad.error or "")


async def test_a_pattern_that_backtracks_without_end_is_stopped(scope: WorkspaceScope):
    """Python's own regex engine cannot be interrupted; raf's search gives up after the
    per-file budget and says why, instead of hanging the run."""
    (scope.real_root / "trap.txt").write_text("a" * 40 + "b\n")
    tool = SearchFile(scope, limits=FileLimits(max_regex_seconds=0.2), use_ripgrep=False)
    result = await asyncio.wait_for(run(tool, pattern=r"(a|aa)+$", path="trap.txt"), 30)
    assert "took over 0.2s on one file" in (result.error or "")
    whole_tree = await asyncio.wait_for(run(tool, pattern=r"(a|aa)+$"), 30)
    assert "use a simpler pattern" in (whole_tree.error or "")


@pytest.mark.parametrize("use_ripgrep", [True, False])
async def test_search_skips_large_files(scope: WorkspaceScope, use_ripgrep: bool):
    (scope.real_root / "big.txt").write_text("needle\n" * 1000)
    limits = FileLimits(max_search_file_bytes=100)
    tool = SearchFile(scope, limits=limits, use_ripgrep=use_ripgrep)
    result = await run(tool, pattern="needle")
    assert result.value["matches"] == []


async def test_invalid_arguments_are_reported(scope: WorkspaceScope):
    result = await run(ReadFile(scope), path="x", start_line=0)
    assert "invalid arguments" in (result.error or "")
    assert not ReadFile(scope).approval_required({"nope": 1})


async def test_unscoped_tool_works_in_the_current_folder(
    scope: WorkspaceScope, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(scope.real_root)
    result = await run(ReadFile(), path="lines.txt", end_line=1)
    assert result.value["content"] == "line 1\n"
    outside = await run(ReadFile(), path="../x")
    assert "approval" in (outside.error or "")
    assert ReadFile().approval_required({"path": "../x"})


async def test_python_only_regex_falls_back_from_ripgrep(scope: WorkspaceScope):
    result = await run(SearchFile(scope), pattern=r"line (?=42)")
    assert result.value["backend"] == "python"
    assert [m["line"] for m in result.value["matches"]] == [42]


async def test_approved_calls_may_leave_the_root(tmp_path: Path):
    from raf.core.call_approval import RunApprovals
    from raf.core.options import ToolApprovalResponse
    from raf.core.run_context import RunContext

    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    scope = WorkspaceScope(root)  # approve_outside
    approvals = RunApprovals(responses=[ToolApprovalResponse(call_id="ok", approved=True)])
    run = RunContext(approvals=approvals)
    approved = ToolContext(call_id="ok", run=run)
    other = ToolContext(call_id="other", run=run)
    args = {"source": "a.txt", "destination": "../out/a.txt"}
    assert MoveFile(scope).approval_required(args)
    refused = await MoveFile(scope).invoke(args, other)
    assert "not approved" in (refused.error or "") and (root / "a.txt").exists()
    moved = await MoveFile(scope).invoke(args, approved)
    assert not moved.is_error and (tmp_path / "out" / "a.txt").read_text() == "a\n"
    # an approval is spent on one call: the same call id cannot carry a second one
    again = await WriteFile(scope).invoke({"path": "../w.txt", "content": "w"}, approved)
    assert "not approved" in (again.error or "") and not (tmp_path / "w.txt").exists()
    approvals.responses.append(ToolApprovalResponse(call_id="ok2", approved=True))
    wrote = await WriteFile(scope).invoke(
        {"path": "../w.txt", "content": "w"}, ToolContext(call_id="ok2", run=run)
    )
    assert not wrote.is_error and (tmp_path / "w.txt").read_text() == "w"
    assert wrote.value == f"created {tmp_path / 'w.txt'} (1 bytes)"


async def test_an_approval_covers_only_the_call_that_was_asked_about(tmp_path: Path):
    from raf.core.call_approval import RunApprovals
    from raf.core.contents import ApprovalRequestContent
    from raf.core.options import ToolApprovalResponse
    from raf.core.run_context import RunContext

    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "ok.txt").write_text("fine\n")
    (tmp_path / "secret.txt").write_text("SECRET\n")
    scope = WorkspaceScope(root)  # approve_outside
    asked = {"path": str(tmp_path / "ok.txt")}
    approvals = RunApprovals(
        responses=[ToolApprovalResponse(call_id="c1", approved=True)],
        pending=[ApprovalRequestContent(call_id="c1", name="read_file", arguments=asked)],
    )
    run = RunContext(approvals=approvals)
    context = ToolContext(call_id="c1", run=run)
    other = await ReadFile(scope).invoke({"path": str(tmp_path / "secret.txt")}, context)
    assert "not approved" in (other.error or "")
    seen = ToolApprovalResponse(call_id="c2", approved=True, arguments=asked)
    approvals.responses.append(seen)
    wrong = await ReadFile(scope).invoke(
        {"path": str(tmp_path / "secret.txt")}, ToolContext(call_id="c2", run=run)
    )
    assert "not approved" in (wrong.error or "")
    read = await ReadFile(scope).invoke(asked, context)
    assert read.value["content"] == "fine\n"


async def test_walks_stop_at_their_time_budget(scope: WorkspaceScope):
    limits = FileLimits(max_seconds=0)
    found = await run(FindFiles(scope, limits=limits), pattern="*")
    assert "stopped after 0s" in found.value["note"]
    searched = await run(SearchFile(scope, limits=limits, use_ripgrep=False), pattern="x")
    assert searched.value["skipped"] == ["(stopped after 0s)"]
    fast = await run(SearchFile(scope, limits=FileLimits(max_seconds=0.0001)), pattern="line")
    assert not fast.is_error  # ripgrep killed by its watchdog or done: either way an answer


@pytest.mark.parametrize("tool", ["find_files", "search_file"])
async def test_a_glob_cannot_stall_the_walk(scope: WorkspaceScope, tool: str):
    """'*a*a*a…b' against a long name of a's backtracks exponentially as a plain regex; the
    globs a model sends are matched component by component without backtracking."""
    (scope.real_root / ("a" * 60)).write_text("a\n")
    (scope.real_root / "aXb").write_text("a\n")
    pattern = "*a" * 8 + "b"
    start = time.monotonic()
    if tool == "find_files":
        result = await run(FindFiles(scope), pattern=pattern)
        found = result.value["matches"]
    else:
        searcher = SearchFile(scope, use_ripgrep=False)
        result = await run(searcher, pattern="a", glob=pattern)
        found = [m["path"] for m in result.value["matches"]]
    assert time.monotonic() - start < 3
    assert found == []
    assert (await run(FindFiles(scope), pattern="*X*")).value["matches"] == ["aXb"]


async def test_clear_errors_for_impossible_requests(scope: WorkspaceScope):
    (scope.real_root / "box").mkdir()
    into_itself = await run(MoveFile(scope), source="box", destination="box/inner")
    assert "into itself" in (into_itself.error or "")
    past_end = await run(ReadFile(scope), path="src/main.py", start_line=500)
    assert past_end.value["content"] == "" and "fewer than 500 lines" in past_end.value["note"]


async def test_rules_cannot_be_sidestepped_by_moving_or_removing_a_folder(tmp_path: Path):
    """secrets/** read: deny must not be escaped by renaming secrets/ (or the file), and
    delete: deny must not be escaped by removing the folder recursively."""
    root = tmp_path / "ws"
    (root / "secrets" / "deeper").mkdir(parents=True)
    (root / "secrets" / "deeper" / "k").write_text("TOP-SECRET\n")
    (root / "logs").mkdir()
    (root / "logs" / "keep.log").write_text("log\n")
    rules = [
        {"path": "secrets/**", "read": "deny"},
        {"path": "logs/*.log", "delete": "deny"},
        {"path": "drafts/**", "read": "approve"},
    ]
    scope = WorkspaceScope(root, policy="deny", rules=rules)
    for source in ("secrets", "secrets/deeper", "secrets/deeper/k"):
        moved = await run(MoveFile(scope), source=source, destination="public")
        assert "OutsideScope" in (moved.error or ""), (source, moved)
    assert not (root / "public").exists()
    removed = await run(RemovePath(scope), path="logs", recursive=True)
    assert "OutsideScope" in (removed.error or "")
    assert (root / "logs" / "keep.log").exists()
    assert (await run(MoveFile(scope), source="logs/keep.log", destination="x.log")).is_error
    (root / "drafts").mkdir()
    (root / "drafts" / "d.txt").write_text("draft\n")
    assert MoveFile(scope).approval_required({"source": "drafts", "destination": "pub"})
    assert not MoveFile(scope).approval_required({"source": "logs", "destination": "l2"})
    for source in ("secrets", "secrets/deeper", "secrets/deeper/k"):  # denied: no question
        assert not MoveFile(scope).approval_required({"source": source, "destination": "p"})
    assert not RemovePath(scope).approval_required({"path": "logs", "recursive": True})
    assert RemovePath(scope).approval_required({"path": "drafts", "recursive": True}) is False
    asked = await run(MoveFile(scope), source="drafts", destination="pub")
    assert "approval" in (asked.error or "")


@pytest.mark.parametrize("use_ripgrep", [True, False])
async def test_searches_and_listings_honour_read_rules(tmp_path: Path, use_ripgrep: bool):
    """search_file over the root must not read a file that read_file may not; find_files
    and list_files do not show what a read rule hides."""
    root = tmp_path / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "k.txt").write_text("TOP-SECRET here\n")
    (root / "notes.txt").write_text("TOP-SECRET is a phrase\n")
    (root / "private.key").write_text("TOP-SECRET key\n")
    outside = tmp_path / "etc"
    outside.mkdir()
    (outside / "conf").write_text("TOP-SECRET outside\n")
    rules = [
        {"path": "secrets/**", "read": "deny"},
        {"path": "*.key", "read": "approve"},
        {"path": f"{outside}/**", "read": "deny"},
    ]
    scope = WorkspaceScope(root, policy="allow", rules=rules)
    searcher = SearchFile(scope, use_ripgrep=use_ripgrep)
    for path in (".", "secrets", str(outside)):
        result = await run(searcher, pattern="TOP-SECRET", path=path)
        texts = [m["text"] for m in result.value["matches"]]
        assert texts == (["TOP-SECRET is a phrase"] if path == "." else []), (path, texts)
    found = await run(FindFiles(scope), pattern="*")
    assert found.value["matches"] == ["secrets/", "notes.txt"]
    listed = await run(ListFiles(scope), path="secrets")
    assert listed.value["entries"] == [] and "hidden" in listed.value["note"]


@pytest.mark.parametrize("use_ripgrep", [True, False])
@pytest.mark.parametrize(
    "pattern",
    ["(?:(?:a{1000}){1000}){1000}", "((a{999}){999}){999}", "(?:x{1,100000}){100000}"],
)
def test_a_pattern_that_would_exhaust_memory_is_refused(
    tmp_path: Path, pattern: str, use_ripgrep: bool
) -> None:
    """Counted repeats are unrolled when a pattern is compiled; the cost is judged from the
    text first, in a child capped at 1 GiB so a regression fails the test, not the host."""
    (tmp_path / "a.txt").write_text("aaaa\n")
    result = run_bounded(
        f"""
        import asyncio, json
        from raf.core.tools import ToolContext
        from raf.tools.files import SearchFile
        from raf.tools.workspace import WorkspaceScope
        tool = SearchFile(WorkspaceScope({str(tmp_path)!r}, policy="deny"),
                          use_ripgrep={use_ripgrep!r})
        result = asyncio.run(tool.invoke({{"pattern": {pattern!r}}}, ToolContext()))
        print(json.dumps(result.error))
        """
    )
    assert "counted repeats" in result and "limit is 100,000" in result


async def test_ordinary_counted_repeats_still_search(scope: WorkspaceScope):
    (scope.real_root / "ids.txt").write_text("id-0123456789\nid-12\n")
    result = await run(SearchFile(scope, use_ripgrep=False), pattern=r"id-\d{10}\b")
    assert [m["line"] for m in result.value["matches"]] == [1]


async def test_a_sparse_giant_file_is_scanned_only_within_budget(scope: WorkspaceScope):
    """A sparse 40 GB file costs nothing on disk; reading up to a far line or counting its
    lines must stop at the scan budget and say so, not read for minutes."""
    giant = scope.real_root / "giant.txt"
    with open(giant, "wb") as handle:
        handle.write(b"a text line\n" * 1000)
        handle.truncate(40 << 30)
    limits = FileLimits(max_scan_bytes=8 << 20)
    start = time.monotonic()
    far = await run(ReadFile(scope, limits=limits), path="giant.txt", start_line=10_000)
    assert "beyond the first 8388608 bytes" in (far.error or "")
    info = await run(InspectFile(scope, limits=limits), path="giant.txt")
    assert info.value["size"] == 40 << 30 and "counted in the first" in info.value["note"]
    assert time.monotonic() - start < 20
