"""The workspace file tools: read, write, edit, list, inspect, make, remove and move
(find_files and search_file live in raf.tools.search, run_command in raf.tools.shell)."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from raf.core.tools import Tool
from raf.tools.scope.budget import CallBudget
from raf.tools.scope.locate import Location, enforce_subtree, located, subtree_verdict
from raf.tools.scope.scoped_tool import FileLimits, PathUse, ScopedTool, call_key
from raf.tools.search import FindFiles, ReadGate, SearchFile
from raf.tools.shell import RunCommand
from raf.tools.workspace import Access, OutsideScopeError, RuleAction, WorkspaceScope

__all__ = [
    "CallBudget",
    "EditFile",
    "FileLimits",
    "FindFiles",
    "InspectFile",
    "ListFiles",
    "MakeDirectory",
    "MoveFile",
    "ReadFile",
    "RemovePath",
    "RunCommand",
    "SearchFile",
    "WriteFile",
    "file_tools",
]

_BLOCK = 1 << 20
_CARRIED = (Access.READ, Access.WRITE, Access.DELETE)
_STRICT = ConfigDict(extra="forbid")


def _is_binary(sample: bytes) -> bool:
    return b"\x00" in sample


def _skip_to_line(fd: int, start: int, budget: int) -> tuple[int, int]:
    """Byte offset where line `start` (1-based) begins, scanning 1 MiB blocks; also the
    line number actually reached (smaller when the file is shorter). Refused once more
    than `budget` bytes were scanned."""
    pos, line = 0, 1
    while line < start:
        if pos >= budget:
            raise ValueError(
                f"line {start} lies beyond the first {budget} bytes scanned (line {line} "
                "was reached there); read a smaller start_line or use search_file"
            )
        block = os.pread(fd, _BLOCK, pos)
        if not block:
            break
        count = block.count(b"\n")
        if line + count < start:
            line += count
            pos += len(block)
            continue
        index = -1
        while line < start:
            index = block.index(b"\n", index + 1)
            line += 1
        pos += index + 1
    return pos, line


class ReadFile(ScopedTool):
    name = "read_file"
    description = (
        "What a text file says: read a file of the workspace, optionally a range of lines "
        "(1-based, inclusive). Large files are read in part: ask for further lines with "
        "start_line."
    )

    path_candidates = "file"

    class Arguments(BaseModel):
        model_config = _STRICT
        path: str = Field(description="File path, relative to the workspace root")
        start_line: int = Field(1, ge=1, description="First line to return (1-based)")
        end_line: int | None = Field(None, ge=1, description="Last line to return (inclusive)")

    def uses(self, args: Any) -> list[PathUse]:
        return [PathUse(path=args.path, access=Access.READ)]

    def run(self, scope: WorkspaceScope, args: Any, approved: bool) -> Any:
        limits = self.limits
        with located(scope, args.path, Access.READ, approved=approved) as loc:
            fd = loc.open_read()
            try:
                size = os.fstat(fd).st_size
                if _is_binary(os.pread(fd, 8192, 0)):
                    raise ValueError(f"{args.path!r} is a binary file; use inspect_file")
                pos, current = _skip_to_line(fd, args.start_line, limits.max_scan_bytes)
                last = args.start_line + limits.max_read_lines - 1
                if args.end_line is not None:
                    last = min(last, args.end_line)
                out = bytearray()
                partial = truncated = False
                while current <= last and not truncated:
                    block = os.pread(fd, _BLOCK, pos)
                    if not block:
                        break
                    index = 0
                    while current <= last and index < len(block):
                        newline = block.find(b"\n", index)
                        stop = len(block) if newline == -1 else newline + 1
                        out += block[index:stop]
                        pos += stop - index
                        index = stop
                        partial = newline == -1
                        if not partial:
                            current += 1
                        if len(out) > limits.max_read_bytes:
                            truncated = True
                            break
                if partial and pos >= size:
                    current += 1  # a last line without a newline
            finally:
                os.close(fd)
            if truncated:
                out = out[: limits.max_read_bytes]
            result: dict[str, Any] = {
                "path": self.shown(scope, loc.path),
                "start_line": args.start_line,
                "end_line": max(current - 1, args.start_line - 1),
                "content": bytes(out).decode("utf-8", errors="replace"),
            }
            if truncated:
                result["note"] = (
                    f"cut at {limits.max_read_bytes} bytes; read a smaller range of lines"
                )
            elif pos < size and (args.end_line is None or current <= args.end_line):
                result["note"] = f"more lines follow; read from start_line={current}"
            elif not out and args.start_line > 1 and current < args.start_line:
                result["note"] = f"the file has fewer than {args.start_line} lines"
            return result


def write_mark(key: str, data: bytes, result: str) -> bytes | None:
    """What a write records on the file: the call's idempotency key, a digest of what it
    wrote, and its result."""
    if not key:
        return None
    digest = hashlib.sha256(data).hexdigest()
    return json.dumps({"key": key, "sha256": digest, "result": result}).encode()


def replayed(loc: Location, key: str, limit: int) -> str | None:
    """The result of the write this same call (same idempotency key) already made, when
    the file still holds exactly what it wrote: a retried call then changes nothing."""
    if not key:
        return None
    raw = loc.read_mark()
    try:
        mark = json.loads(raw) if raw else None
    except ValueError:
        return None
    if not isinstance(mark, dict) or mark.get("key") != key:
        return None
    fd = loc.open_read()
    try:
        if os.fstat(fd).st_size > limit:
            return None
        content = b"".join(iter(lambda: os.read(fd, _BLOCK), b""))
    finally:
        os.close(fd)
    if hashlib.sha256(content).hexdigest() != mark.get("sha256"):
        return None  # changed since: the mark no longer describes the file
    result = mark.get("result")
    return result if isinstance(result, str) else None


class WriteFile(ScopedTool):
    name = "write_file"
    description = (
        "Write a text file in the workspace, replacing it whole (created with its folders "
        "when missing). Use edit_file to change part of a file."
    )

    class Arguments(BaseModel):
        model_config = _STRICT
        path: str = Field(description="File path, relative to the workspace root")
        content: str = Field(description="The complete new content")

    def uses(self, args: Any) -> list[PathUse]:
        return [PathUse(path=args.path, access=Access.WRITE)]

    def run(self, scope: WorkspaceScope, args: Any, approved: bool) -> Any:
        data = args.content.encode("utf-8")
        if len(data) > self.limits.max_write_bytes:
            raise ValueError(
                f"content is {len(data)} bytes; the limit is {self.limits.max_write_bytes}"
            )
        with located(scope, args.path, Access.WRITE, approved=approved, create_dirs=True) as loc:
            done = replayed(loc, call_key(), self.limits.max_write_bytes)
            if done is not None:  # this very call wrote it already (a retried step)
                return done
            verb = "replaced" if loc.exists else "created"
            message = f"{verb} {self.shown(scope, loc.path)} ({len(data)} bytes)"
            loc.write_atomic(data, mark=write_mark(call_key(), data, message))
            return message


class EditFile(ScopedTool):
    name = "edit_file"
    description = (
        "Replace an exact string in a workspace file. old_string must occur exactly once "
        "(include surrounding lines to make it unique) unless replace_all is true."
    )

    class Arguments(BaseModel):
        model_config = _STRICT
        path: str = Field(description="File path, relative to the workspace root")
        old_string: str = Field(min_length=1, description="Exact text to replace")
        new_string: str = Field(description="Replacement text")
        replace_all: bool = Field(False, description="Replace every occurrence")

    def uses(self, args: Any) -> list[PathUse]:
        return [PathUse(path=args.path, access=a) for a in (Access.READ, Access.WRITE)]

    def run(self, scope: WorkspaceScope, args: Any, approved: bool) -> Any:
        with located(scope, args.path, Access.WRITE, approved=approved) as loc:
            done = replayed(loc, call_key(), self.limits.max_write_bytes)
            if done is not None:  # this very call edited it already (a retried step)
                return done
            fd = loc.open_read()
            try:
                size = os.fstat(fd).st_size
                if size > self.limits.max_write_bytes:
                    raise ValueError(f"{args.path!r} is {size} bytes; too large to edit")
                raw = b"".join(iter(lambda: os.read(fd, _BLOCK), b""))
            finally:
                os.close(fd)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{args.path!r} is not UTF-8 text") from None
            count = text.count(args.old_string)
            if count == 0:
                raise ValueError(
                    f"old_string was not found in {args.path!r}; read the file and copy the "
                    "text exactly (spaces and line ends included)"
                )
            if count > 1 and not args.replace_all:
                raise ValueError(
                    f"old_string occurs {count} times in {args.path!r}; add surrounding lines "
                    "to make it unique, or set replace_all"
                )
            new = text.replace(args.old_string, args.new_string)
            message = f"replaced {count} occurrence(s) in {self.shown(scope, loc.path)}"
            encoded = new.encode("utf-8")
            loc.write_atomic(encoded, mark=write_mark(call_key(), encoded, message))
            return message


class ListFiles(ScopedTool):
    name = "list_files"
    description = (
        "What files are in a folder: list a workspace folder's files and folders, with "
        "types and sizes (folders end with '/')."
    )

    path_candidates = "folder"

    class Arguments(BaseModel):
        model_config = _STRICT
        path: str = Field(".", description="Folder, relative to the workspace root")

    def uses(self, args: Any) -> list[PathUse]:
        return [PathUse(path=args.path, access=Access.READ)]

    def run(self, scope: WorkspaceScope, args: Any, approved: bool) -> Any:
        with located(scope, args.path, Access.READ, approved=approved) as loc:
            gate = ReadGate(scope, loc, approved)
            fd = loc.open_dir()
            hidden = 0
            try:
                entries: list[dict[str, Any]] = []
                total = 0
                with os.scandir(fd) as it:
                    for entry in sorted(it, key=lambda e: e.name):
                        if gate.blocked(entry.name):
                            hidden += 1
                            continue
                        total += 1
                        if len(entries) >= self.limits.max_entries:
                            continue
                        st = entry.stat(follow_symlinks=False)
                        item: dict[str, Any] = {"name": entry.name, "type": _type_of(st)}
                        if item["type"] == "folder":
                            item["name"] += "/"
                        elif item["type"] == "file":
                            item["size"] = st.st_size
                        entries.append(item)
            finally:
                os.close(fd)
            result: dict[str, Any] = {"path": self.shown(scope, loc.path), "entries": entries}
            notes = []
            if total > len(entries):
                notes.append(f"showing {len(entries)} of {total} entries")
            if hidden:
                notes.append(f"{hidden} entries hidden by the workspace's path rules")
            if notes:
                result["note"] = "; ".join(notes)
            return result


def _type_of(st: os.stat_result) -> str:
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


class InspectFile(ScopedTool):
    name = "inspect_file"
    description = (
        "How big a file is and how many lines it has: describe a workspace path without "
        "reading it (type, size in bytes, line count, encoding, modified time)."
    )

    path_candidates = "any"

    class Arguments(BaseModel):
        model_config = _STRICT
        path: str = Field(description="Path, relative to the workspace root")

    def uses(self, args: Any) -> list[PathUse]:
        return [PathUse(path=args.path, access=Access.READ)]

    def run(self, scope: WorkspaceScope, args: Any, approved: bool) -> Any:
        with located(scope, args.path, Access.READ, approved=approved) as loc:
            if loc.stat is None:
                raise FileNotFoundError(2, f"{args.path!r} does not exist")
            info: dict[str, Any] = {"path": self.shown(scope, loc.path)}
            if loc.is_dir:
                fd = loc.open_dir()
                try:
                    info.update(type="folder", entries=len(os.listdir(fd)))
                finally:
                    os.close(fd)
                return info
            fd = loc.open_read()
            try:
                st = os.fstat(fd)
                sample = os.pread(fd, 8192, 0)
                lines = 0
                pos = 0
                binary = _is_binary(sample)
                last = b""
                while not binary and pos < self.limits.max_scan_bytes:
                    block = os.pread(fd, _BLOCK, pos)
                    if not block:
                        break
                    lines += block.count(b"\n")
                    pos += len(block)
                    last = block
                counted_all = pos >= st.st_size
                if not binary and counted_all and st.st_size and not last.endswith(b"\n"):
                    lines += 1
            finally:
                os.close(fd)
            info.update(
                type="binary file" if binary else "text file",
                size=st.st_size,
                modified=datetime.fromtimestamp(st.st_mtime, UTC).isoformat(timespec="seconds"),
            )
            if not binary:
                info["lines"] = lines
                info["encoding"] = _guess_encoding(sample)
                if not counted_all:
                    info["note"] = (
                        f"lines counted in the first {pos} bytes only (the file has "
                        f"{st.st_size}); the scan budget is {self.limits.max_scan_bytes} bytes"
                    )
            return info


def _guess_encoding(sample: bytes) -> str:
    if sample.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    try:
        sample.decode("ascii")
        return "ascii"
    except UnicodeDecodeError:
        pass
    try:
        sample.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as exc:
        if exc.start >= len(sample) - 3:
            return "utf-8"  # a character cut by the sample's end
        return "unknown (not UTF-8)"


class MakeDirectory(ScopedTool):
    name = "make_directory"
    description = "Create a folder in the workspace, with its missing parents."

    class Arguments(BaseModel):
        model_config = _STRICT
        path: str = Field(description="Folder path, relative to the workspace root")

    def uses(self, args: Any) -> list[PathUse]:
        return [PathUse(path=args.path, access=Access.WRITE)]

    def run(self, scope: WorkspaceScope, args: Any, approved: bool) -> Any:
        with located(scope, args.path, Access.WRITE, approved=approved, create_dirs=True) as loc:
            created = loc.mkdir()
            shown = self.shown(scope, loc.path)
            return f"created {shown}" if created else f"{shown} already exists"


class RemovePath(ScopedTool):
    name = "remove_path"
    description = (
        "Delete a file, symlink or empty folder in the workspace; recursive=true deletes a "
        "folder with its contents."
    )

    class Arguments(BaseModel):
        model_config = _STRICT
        path: str = Field(description="Path, relative to the workspace root")
        recursive: bool = Field(False, description="Delete a folder and all it contains")

    def uses(self, args: Any) -> list[PathUse]:
        return [PathUse(path=args.path, access=Access.DELETE, follow_final=False)]

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        if super().approval_required(arguments):
            return True
        try:
            args = self.Arguments.model_validate(arguments)
            verdict = subtree_verdict(
                self.effective_scope(), args.path, (Access.DELETE,), walk=args.recursive
            )
        except (ValidationError, OSError, ValueError, OutsideScopeError):
            return False  # invoke answers with the error
        return verdict is not None and verdict[0] is RuleAction.APPROVE

    def run(self, scope: WorkspaceScope, args: Any, approved: bool) -> Any:
        enforce_subtree(
            scope,
            args.path,
            (Access.DELETE,),
            walk=args.recursive,
            approved=approved,
            verb="remove",
        )
        with located(scope, args.path, Access.DELETE, approved=approved, follow_final=False) as loc:
            what = loc.remove(recursive=args.recursive)
            return f"removed {what} {self.shown(scope, loc.path)}"


class MoveFile(ScopedTool):
    name = "move_file"
    description = "Move or rename a file or folder; both ends are checked against the workspace."

    class Arguments(BaseModel):
        model_config = _STRICT
        source: str = Field(description="Existing path, relative to the workspace root")
        destination: str = Field(description="New path, relative to the workspace root")
        overwrite: bool = Field(False, description="Replace an existing destination file")

    def uses(self, args: Any) -> list[PathUse]:
        return [
            PathUse(path=args.source, access=Access.DELETE, follow_final=False),
            PathUse(path=args.destination, access=Access.WRITE, follow_final=False),
        ]

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        if super().approval_required(arguments):
            return True
        try:
            args = self.Arguments.model_validate(arguments)
            verdict = subtree_verdict(self.effective_scope(), args.source, _CARRIED, walk=True)
        except (ValidationError, OSError, ValueError, OutsideScopeError):
            return False  # invoke answers with the error
        return verdict is not None and verdict[0] is RuleAction.APPROVE

    def run(self, scope: WorkspaceScope, args: Any, approved: bool) -> Any:
        # a moved path keeps its content under a new name: the rules on reading,
        # changing and deleting it (and all it holds) travel with it
        enforce_subtree(scope, args.source, _CARRIED, walk=True, approved=approved, verb="move")
        with (
            located(
                scope, args.source, Access.DELETE, approved=approved, follow_final=False
            ) as src,
            located(
                scope,
                args.destination,
                Access.WRITE,
                approved=approved,
                follow_final=False,
                create_dirs=True,
            ) as dst,
        ):
            if src.name is None or src.stat is None:
                raise FileNotFoundError(2, f"{args.source!r} does not exist")
            if dst.name is None:
                raise IsADirectoryError(21, "the destination is the workspace root")
            if dst.exists and dst.is_dir:
                raise IsADirectoryError(21, f"{args.destination!r} is an existing folder")
            if dst.exists and not args.overwrite:
                raise FileExistsError(17, f"{args.destination!r} exists; set overwrite")
            try:
                os.rename(src.name, dst.name, src_dir_fd=src.parent_fd, dst_dir_fd=dst.parent_fd)
            except OSError as exc:
                if exc.errno == errno.EINVAL:
                    raise ValueError(
                        f"cannot move {args.source!r} into itself ({args.destination!r})"
                    ) from None
                raise
            return f"moved {self.shown(scope, src.path)} to {self.shown(scope, dst.path)}"


def file_tools() -> list[Tool]:
    """Fresh, unscoped instances of the eleven scope tools (kind file: ten; shell: run_command)."""
    return [
        ReadFile(),
        WriteFile(),
        EditFile(),
        ListFiles(),
        InspectFile(),
        MakeDirectory(),
        RemovePath(),
        MoveFile(),
        FindFiles(),
        SearchFile(),
        RunCommand(),
    ]
