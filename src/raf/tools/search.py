"""find_files (glob) and search_file (regex) over a workspace folder; neither follows a
symlink, and search_file uses ripgrep when it is installed (same rules, much faster)."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import regex as regex_engine
from pydantic import BaseModel, ConfigDict, Field

from raf.core.bounded_regex import check_pattern
from raf.tools.scope.identity import IdentityGuard
from raf.tools.scope.locate import Location, located
from raf.tools.scope.scoped_tool import PathUse, ScopedTool
from raf.tools.workspace import Access, ResolvedPath, RuleAction, WorkspaceScope

SearchPattern = regex_engine.Pattern[str]
"""Patterns are compiled with the `regex` engine, whose matching takes a timeout."""


def _compile_pattern(pattern: str, ignore_case: bool) -> SearchPattern:
    """The compiled pattern; its cost is bounded first (ripgrep gets only checked ones)."""
    check_pattern(pattern)
    flags = regex_engine.MULTILINE | (regex_engine.IGNORECASE if ignore_case else 0)
    try:
        return regex_engine.compile(pattern, flags)
    except regex_engine.error as exc:
        raise ValueError(f"invalid regular expression: {exc}") from None


_STRICT = ConfigDict(extra="forbid")
_SKIP_DIRS = frozenset({".git"})
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_DIR_OPEN_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
RG_TIMEOUT_S = 60.0


def _check_glob(pattern: str) -> str:
    if "\x00" in pattern:
        raise ValueError("the pattern contains a NUL byte")
    if pattern.startswith(("/", "~")):
        raise ValueError("the pattern must be relative to the folder searched (no '/' or '~')")
    if ".." in pattern.split("/"):
        raise ValueError("the pattern may not contain '..': it cannot climb out of the folder")
    return pattern


class GlobMatcher:
    """A model's glob, matched without backtracking blow-ups: the pattern and the path are
    split at '/', a component `**` stands for any number of folders (at the end: one or
    more, as in ripgrep), and each other component is an fnmatch pattern (`*`, `?`,
    `[...]`, `[!...]`), whose translation uses atomic groups. A pattern without '/' is
    matched against names at any depth."""

    def __init__(self, pattern: str) -> None:
        self.whole = "/" in pattern
        parts = [p for p in pattern.split("/") if p not in ("", ".")]
        self.parts: list[re.Pattern[str] | None] = [
            None if p == "**" else re.compile(fnmatch.translate(p), re.DOTALL) for p in parts
        ]

    def matches(self, rel: str) -> bool:
        """True when `rel` (a path relative to the folder searched) matches."""
        if not self.whole:
            name = rel.rsplit("/", 1)[-1]
            part = self.parts[0] if self.parts else None
            return part is None or part.fullmatch(name) is not None
        names = rel.split("/")
        parts = self.parts
        # reach[j]: the pattern so far can consume exactly names[:j]
        reach = [True] + [False] * len(names)
        for index, part in enumerate(parts):
            nxt = [False] * (len(names) + 1)
            if part is None:
                least = 1 if index == len(parts) - 1 else 0
                first = next((j for j, ok in enumerate(reach) if ok), None)
                if first is not None:
                    for j in range(first + least, len(names) + 1):
                        nxt[j] = True
            else:
                for j, ok in enumerate(reach[:-1]):
                    if ok and part.fullmatch(names[j]) is not None:
                        nxt[j + 1] = True
            reach = nxt
        return reach[-1]


class ReadGate:
    """Whether the path rules (and, outside the root, the policy) let a call read a path
    found below a searched or listed folder; with no rules everything passes."""

    def __init__(self, scope: WorkspaceScope, loc: Location, approved: bool) -> None:
        self.scope = scope
        self.loc = loc
        self.approved = approved
        self.active = bool(scope.rules)
        base = loc.path.relative_to(scope.real_root).as_posix() if loc.inside else ""
        self.base = "" if base == "." else base
        self.identity = IdentityGuard(scope, approved=approved)

    def same_as_protected(self, rel: str, fd: int) -> str | None:
        """Why the opened file `rel` may not be read: it is another name (hard link, bind
        mount) of a file a read rule protects; None when it is not."""
        if not self.loc.inside:
            return None
        full = "/".join(p for p in (self.base, rel) if p) or "."
        return self.identity.refusal(full, os.fstat(fd))

    def blocked(self, rel: str) -> bool:
        """True when `rel` (below the folder, POSIX separators) may not be read."""
        if not self.active:
            return False
        path = self.loc.path / rel if rel else self.loc.path
        if self.loc.inside:
            full = "/".join(p for p in (self.base, rel) if p) or "."
            where = ResolvedPath(inside=True, path=path, relative=full, exists=True)
        else:
            where = ResolvedPath(inside=False, path=path, exists=True)
        action = self.scope.decide_resolved(where, Access.READ).action
        return action is RuleAction.DENY or (action is RuleAction.APPROVE and not self.approved)


def _walk_tree(top_fd: int) -> Iterator[tuple[str, list[str], list[str], int]]:
    """os.fwalk below an open folder: fd-relative, never follows symlinks."""
    yield from os.fwalk(".", dir_fd=top_fd, follow_symlinks=False)


class FindFiles(ScopedTool):
    name = "find_files"
    description = (
        "Is there a file named like this: find files and folders by name (a glob) below a "
        "workspace folder. A pattern without '/' "
        "matches names at any depth ('*.py'); with '/' it matches the path relative to "
        "the folder ('src/**/test_*.py'). Symlinks are listed, never followed."
    )

    path_candidates = "folder"

    class Arguments(BaseModel):
        model_config = _STRICT
        pattern: str = Field(description="Glob such as '*.md' or 'docs/**/*.md'")
        path: str = Field(".", description="Folder to search, relative to the workspace root")

    def uses(self, args: Any) -> list[PathUse]:
        return [PathUse(path=args.path, access=Access.READ)]

    def run(self, scope: WorkspaceScope, args: Any, approved: bool) -> Any:
        matcher = GlobMatcher(_check_glob(args.pattern))
        limit = self.limits.max_entries
        found: list[str] = []
        total = 0
        deadline = time.monotonic() + self.limits.max_seconds
        out_of_time = False
        with located(scope, args.path, Access.READ, approved=approved) as loc:
            gate = ReadGate(scope, loc, approved)
            top = loc.open_dir()
            try:
                for dirpath, dirnames, filenames, _fd in _walk_tree(top):
                    if time.monotonic() > deadline:
                        out_of_time = True
                        break
                    base = "" if dirpath == "." else dirpath[2:] + "/"
                    dirnames[:] = sorted(
                        d for d in dirnames if d not in _SKIP_DIRS and not gate.blocked(base + d)
                    )
                    shown = [f for f in sorted(filenames) if not gate.blocked(base + f)]
                    for name in [*(d + "/" for d in dirnames), *shown]:
                        if matcher.matches(base + name.rstrip("/")):
                            total += 1
                            if len(found) < limit:
                                found.append(base + name)
            finally:
                os.close(top)
            result: dict[str, Any] = {"path": self.shown(scope, loc.path), "matches": found}
            if total > len(found):
                result["note"] = f"showing {len(found)} of {total} matches; narrow the pattern"
            if out_of_time:
                result["note"] = (
                    f"stopped after {self.limits.max_seconds:g}s; narrow the path or pattern"
                )
            return result


class SearchFile(ScopedTool):
    name = "search_file"
    description = (
        "Search file contents below a workspace folder (or in one file) with a regular "
        "expression; returns path, line number and line. Binary and very large files are "
        "skipped; symlinks are not followed."
    )

    path_candidates = "any"

    class Arguments(BaseModel):
        model_config = _STRICT
        pattern: str = Field(description="Regular expression (Python/ripgrep syntax)")
        path: str = Field(".", description="Folder or file, relative to the workspace root")
        glob: str | None = Field(None, description="Only files matching this glob, e.g. '*.py'")
        ignore_case: bool = Field(False, description="Case-insensitive search")
        max_matches: int | None = Field(None, ge=1, description="Stop after this many matches")

    def __init__(self, *args: Any, use_ripgrep: bool | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.use_ripgrep = use_ripgrep

    def create_scoped(self, scope: WorkspaceScope) -> SearchFile:
        return SearchFile(
            scope, limits=self.limits, budget=self.budget, use_ripgrep=self.use_ripgrep
        )

    def uses(self, args: Any) -> list[PathUse]:
        return [PathUse(path=args.path, access=Access.READ)]

    def run(self, scope: WorkspaceScope, args: Any, approved: bool) -> Any:
        regex = _compile_pattern(args.pattern, args.ignore_case)
        if args.glob is not None:
            _check_glob(args.glob)
        limit = min(args.max_matches or self.limits.max_matches, self.limits.max_matches)
        with located(scope, args.path, Access.READ, approved=approved) as loc:
            if loc.stat is not None and not loc.is_dir:
                matches = list(self._search_one(loc, regex, limit))
                skipped: list[str] = []
                backend = "python"
            else:
                gate = ReadGate(scope, loc, approved)
                top = loc.open_dir()
                try:
                    rg = shutil.which("rg") if self.use_ripgrep is not False else None
                    outcome = None
                    if rg is not None:
                        outcome = self._ripgrep(rg, top, loc, args, limit, gate)
                    if outcome is None:
                        outcome = self._python(top, loc, regex, args.glob, limit, gate)
                        backend = "python"
                    else:
                        backend = "ripgrep"
                    matches, skipped = outcome
                finally:
                    os.close(top)
            base = self.shown(scope, loc.path)
            result: dict[str, Any] = {"path": base, "matches": matches, "backend": backend}
            if len(matches) >= limit:
                result["note"] = f"stopped at {limit} matches; narrow the pattern or path"
            if skipped:
                result["skipped"] = skipped[:20]
            return result

    def _line(self, text: str) -> str:
        cap = self.limits.max_line_chars
        text = text.rstrip("\r\n")
        return text if len(text) <= cap else text[:cap] + "…"

    def _scan(self, data: bytes, regex: SearchPattern, limit: int) -> list[tuple[int, str]]:
        text = data.decode("utf-8", errors="replace")
        out: list[tuple[int, str]] = []
        last_line = 0
        line_no = 1
        line_pos = 0
        budget = self.limits.max_regex_seconds
        try:
            found = list(regex.finditer(text, timeout=budget))
        except TimeoutError:
            raise ValueError(
                f"the pattern took over {budget:g}s on one file (it backtracks too much); "
                "use a simpler pattern"
            ) from None
        for match in found:
            start = match.start()
            line_no += text.count("\n", line_pos, start)
            line_pos = start
            if line_no == last_line:
                continue
            last_line = line_no
            begin = text.rfind("\n", 0, start) + 1
            end = text.find("\n", start)
            out.append((line_no, self._line(text[begin : end if end != -1 else len(text)])))
            if len(out) >= limit:
                break
        return out

    def _read_small(self, fd: int, skipped: list[str], shown: str, shared_ok: bool) -> bytes | None:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size > self.limits.max_search_file_bytes:
            skipped.append(f"{shown} (larger than {self.limits.max_search_file_bytes} bytes)")
            return None
        if st.st_nlink > 1 and not shared_ok:
            skipped.append(f"{shown} (hard-linked: may be outside the workspace)")
            return None
        data = os.read(fd, self.limits.max_search_file_bytes + 1)
        if b"\x00" in data[:8192]:
            return None
        return data

    def _search_one(self, loc: Location, regex: SearchPattern, limit: int) -> Iterator[Any]:
        fd = loc.open_read()
        try:
            skipped: list[str] = []
            data = self._read_small(fd, skipped, loc.shown, True)
        finally:
            os.close(fd)
        if skipped:
            raise ValueError(skipped[0])
        for line_no, text in self._scan(data or b"", regex, limit):
            yield {"path": self.shown(loc.scope, loc.path), "line": line_no, "text": text}

    def _python(
        self,
        top: int,
        loc: Location,
        regex: SearchPattern,
        glob: str | None,
        limit: int,
        gate: ReadGate,
    ) -> tuple[list[dict[str, Any]], list[str]]:
        matcher = GlobMatcher(glob) if glob else None
        matches: list[dict[str, Any]] = []
        skipped: list[str] = []
        deadline = time.monotonic() + self.limits.max_seconds
        for dirpath, dirnames, filenames, dir_fd in _walk_tree(top):
            if time.monotonic() > deadline:
                skipped.append(f"(stopped after {self.limits.max_seconds:g}s)")
                break
            base = "" if dirpath == "." else dirpath[2:] + "/"
            dirnames[:] = sorted(
                d for d in dirnames if d not in _SKIP_DIRS and not gate.blocked(base + d)
            )
            for name in sorted(filenames):
                rel = base + name
                if matcher is not None and not matcher.matches(rel):
                    continue
                if gate.blocked(rel):
                    continue
                try:
                    fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
                except OSError:
                    continue  # a symlink (ELOOP), a vanished file, a FIFO: not followed
                try:
                    why = gate.same_as_protected(rel, fd)
                    if why is not None:
                        skipped.append(why)
                        continue
                    data = self._read_small(fd, skipped, rel, loc.shared_ok or not loc.inside)
                finally:
                    os.close(fd)
                if data is None:
                    continue
                for line_no, text in self._scan(data, regex, limit - len(matches)):
                    matches.append({"path": self._join(loc, rel), "line": line_no, "text": text})
                if len(matches) >= limit:
                    return matches, skipped
        return matches, skipped

    def _join(self, loc: Location, rel: str) -> str:
        base = self.shown(loc.scope, loc.path)
        return rel if base == "." else f"{base}/{rel}"

    def _ripgrep(
        self, rg: str, top: int, loc: Location, args: Any, limit: int, gate: ReadGate
    ) -> tuple[list[dict[str, Any]], list[str]] | None:
        """Run rg in the already-open folder (cwd through /proc/self/fd, so no path is
        re-resolved), then check every line it reports against the file as read here
        through an O_NOFOLLOW walk: rg opens the paths it listed by name, so a folder
        swapped for a symlink mid-search could make it read outside files, and nothing it
        read is trusted. None when rg rejects the pattern and Python should search instead."""
        if not os.path.isdir(f"/proc/self/fd/{top}"):
            return None
        cmd = [
            rg, "--no-config", "--no-heading", "--with-filename", "--line-number", "--null",
            "--color=never", "--hidden", "--no-ignore", "--no-messages", "-g", "!.git",
            f"--max-filesize={self.limits.max_search_file_bytes}",
            f"--max-count={limit}",
        ]  # fmt: skip
        if args.ignore_case:
            cmd.append("--ignore-case")
        if args.glob:
            cmd += ["-g", args.glob]
        cmd += ["-e", args.pattern, "--", "."]
        proc = subprocess.Popen(
            cmd,
            cwd=f"/proc/self/fd/{top}",
            pass_fds=(top,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        reported: dict[str, list[tuple[int, bytes]]] = {}
        count = 0
        watchdog = threading.Timer(self.limits.max_seconds, proc.kill)
        watchdog.start()
        assert proc.stdout is not None
        try:
            for raw in proc.stdout:
                path_b, _, rest = raw.partition(b"\x00")
                line_b, _, text_b = rest.partition(b":")
                if not line_b.isdigit():
                    continue
                rel = path_b.decode("utf-8", "surrogateescape").removeprefix("./")
                if gate.blocked(rel):
                    continue
                reported.setdefault(rel, []).append((int(line_b), text_b.removesuffix(b"\n")))
                count += 1
                if count >= limit:
                    break
        finally:
            watchdog.cancel()
            if proc.poll() is None:
                proc.kill()
            _, err = proc.communicate(timeout=RG_TIMEOUT_S)
        skipped: list[str] = []
        if proc.returncode == -9 and count < limit:
            skipped.append(f"(stopped after {self.limits.max_seconds:g}s)")
        if proc.returncode == 2 and not reported and b"regex" in err.lower():
            return None
        matches: list[dict[str, Any]] = []
        for rel, found in reported.items():
            lines = self._safe_lines(top, rel, loc, skipped, gate)
            for number, seen in found:
                # only a line rg saw that is also the file's line here is reported
                if lines is not None and 0 < number <= len(lines) and lines[number - 1] == seen:
                    text = self._line(seen.decode("utf-8", errors="replace"))
                    matches.append({"path": self._join(loc, rel), "line": number, "text": text})
        return matches, skipped

    def _safe_lines(
        self, top: int, rel: str, loc: Location, skipped: list[str], gate: ReadGate
    ) -> list[bytes] | None:
        """The lines of `rel` as read through the O_NOFOLLOW walk; None when it is not a
        plain, singly-linked (or allowed) text file of the workspace."""
        fd = _open_below(top, rel)
        if fd is None:
            return None  # a symlink on the way, a vanished or special file: not followed
        try:
            why = gate.same_as_protected(rel, fd)
            if why is not None:
                skipped.append(why)
                return None
            data = self._read_small(fd, skipped, rel, loc.shared_ok or not loc.inside)
        finally:
            os.close(fd)
        return None if data is None else data.split(b"\n")


def _open_below(top: int, rel: str) -> int | None:
    """A read fd of the regular file `rel` below the folder fd `top`, opening every
    component with O_NOFOLLOW; None if any of them is a symlink, missing or odd."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    fds: list[int] = []
    try:
        current = top
        for part in parts[:-1]:
            current = os.open(part, _DIR_OPEN_FLAGS, dir_fd=current)
            fds.append(current)
        fd = os.open(parts[-1], _OPEN_FLAGS, dir_fd=current)
    except OSError:
        return None
    finally:
        for opened in fds:
            os.close(opened)
    os.set_blocking(fd, True)
    return fd
