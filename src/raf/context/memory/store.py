"""The super-brain folder: its layout, seeded on first use, and safe file access (file
locks across processes, atomic writes)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from raf.context.memory.layout import REFERENCES, TEMPLATES, page_front_matter
from raf.core.errors import RafError
from raf.core.private_files import open_private, private_dir
from raf.tools.scope.confined import ConfinedFolder
from raf.tools.workspace import OutsideScopeError

EARLIER_NAMES = {
    "soul.md": "references/identity.md",
    "user.md": "references/user.md",
    "rules.md": "references/rules.md",
    "lesson.md": "references/lessons.md",
    "preference.md": "references/preferences.md",
}
"""The five pages' names before raf took the original framework's layout (lower case)."""
LATER_NAMES = {earlier: later for later, earlier in EARLIER_NAMES.items()}

LOCK_FILE = ".lock"
CURATOR_LOCK_FILE = ".curator.lock"
MAX_READ_CHARS = 200_000


class OutsideMemoryError(RafError, ValueError):
    """A path that leads outside the memory folder."""


class MemoryPageError(RafError, OSError):
    """A memory page that is missing, not a file, or not UTF-8 text."""


def today() -> str:
    return time.strftime("%Y-%m-%d", time.gmtime())


class MemoryStore:
    """File access to one memory folder. Every write takes the folder's lock and replaces
    the file atomically, so readers and other processes never see half a file."""

    def __init__(self, directory: str | Path) -> None:
        self.root = Path(directory).expanduser().absolute()

    # -- paths ------------------------------------------------------------------------

    def resolve(self, relative: str) -> Path:
        """The absolute path of `relative`; refused when it leaves the folder."""
        cleaned = relative.strip().replace("\\", "/")
        if not cleaned or cleaned.startswith(("/", "~")):
            raise OutsideMemoryError(f"{relative!r}: use a path relative to the memory folder")
        root = self.root.resolve()
        try:
            target = (root / cleaned).resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL byte
            raise OutsideMemoryError(f"{relative!r} cannot be resolved: {exc}") from None
        if not target.is_relative_to(root) or target == root:
            raise OutsideMemoryError(f"{relative!r} leads outside the memory folder")
        if target.name in (LOCK_FILE, CURATOR_LOCK_FILE):
            raise OutsideMemoryError(f"{relative!r} is reserved")
        try:  # the same walk as the file tools, so a link raf would refuse is refused here
            ConfinedFolder(root, label="memory folder").stat(target.relative_to(root).as_posix())
        except OutsideScopeError as exc:
            raise OutsideMemoryError(f"{relative!r}: {exc}") from None
        except (FileNotFoundError, NotADirectoryError):
            pass  # read() and write() say what is missing
        except OSError as exc:  # a link loop, a name too long
            raise OutsideMemoryError(f"{relative!r} cannot be resolved: {exc}") from None
        return target

    def relative(self, path: Path) -> str:
        return path.resolve().relative_to(self.root.resolve()).as_posix()

    def pages(self) -> list[str]:
        """Every Markdown page, as relative paths (hidden entries and links left out: a
        link is never followed out of the folder, nor into a loop)."""
        if not self.root.is_dir():
            return []
        folder = ConfinedFolder(self.root, label="memory folder")
        return folder.files(suffixes=frozenset({".md"}))

    def files(self) -> list[str]:
        """Every plain file but hidden and temporary ones, as relative paths."""
        if not self.root.is_dir():
            return []
        folder = ConfinedFolder(self.root, label="memory folder")
        return [name for name in folder.files() if not name.endswith(".tmp")]

    # -- locking and writing ----------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the folder's write lock (blocking; call from a worker thread)."""
        with open_private(self.root / LOCK_FILE) as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    @contextlib.asynccontextmanager
    async def curator_lock(self, timeout_s: float = 600.0) -> AsyncIterator[None]:
        """Only one curator at a time on this folder, across processes; waits without
        blocking the event loop and can be cancelled while waiting."""
        handle = await asyncio.to_thread(self._open_lock_file, CURATOR_LOCK_FILE)
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise TimeoutError(
                            f"another curator held {self.root} for over {timeout_s}s"
                        ) from None
                    await asyncio.sleep(0.05)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        finally:
            handle.close()

    def _open_lock_file(self, name: str) -> BinaryIO:
        return open_private(self.root / name)

    def _write_unlocked(self, target: Path, text: str) -> None:
        """Replace `target` through the fd walk (temporary name, fsync, rename): a folder
        swapped for a symlink since `resolve` cannot carry the write outside."""
        root = self.root.resolve()
        try:
            relative = target.relative_to(root).as_posix()
        except ValueError:
            relative = target.relative_to(self.root).as_posix()
        try:
            ConfinedFolder(self.root, label="memory folder").write_text(relative, text)
        except OutsideScopeError as exc:
            raise OutsideMemoryError(f"memory file {relative!r}: {exc}") from None

    def find(self, relative: str) -> Path:
        """The file `relative` names: as written, else the one whose path differs only in
        case (`user.md` for `USER.md`), else the same page under raf's earlier name
        (`references/user.md` for `USER.md`, and back)."""
        target = self.resolve(relative)
        if target.exists():
            return target
        wanted = self.relative(target).lower()
        for other in (wanted, EARLIER_NAMES.get(wanted), LATER_NAMES.get(wanted)):
            for candidate in self.files() if other else ():
                if candidate.lower() == other:
                    return self.resolve(candidate)
        return target

    def read(self, relative: str) -> str:
        """A page's text (cut at MAX_READ_CHARS); MemoryPageError names what is wrong."""
        target = self.find(relative)
        if not target.is_file():
            what = "is a folder, not a page" if target.is_dir() else "does not exist"
            raise MemoryPageError(f"memory page {relative!r} {what} in {self.root}")
        folder = ConfinedFolder(self.root, label="memory folder")
        try:
            # read through the fd walk: a link swapped in after the check, a FIFO or a
            # hard link is refused rather than followed
            cap = 4 * MAX_READ_CHARS
            data = folder.read_bytes(self.relative(target), max_bytes=cap)
            text = (
                data.decode("utf-8") if len(data) <= cap else data[:cap].decode("utf-8", "ignore")
            )
        except OutsideScopeError as exc:
            raise OutsideMemoryError(f"memory page {relative!r}: {exc}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise MemoryPageError(f"memory page {relative!r} in {self.root}: {exc}") from None
        if len(text) > MAX_READ_CHARS:
            text = text[:MAX_READ_CHARS] + f"\n[… cut at {MAX_READ_CHARS} characters]"
        return text

    def write(self, relative: str, text: str) -> bool:
        """Replace a file; returns True when the file is new. New asset pages are added
        to index.md."""
        target = self.resolve(relative)
        with self.locked():
            created = not target.exists()
            self._write_unlocked(target, text)
            if created:
                self._index_unlocked(self.relative(target))
        return created

    def update(self, relative: str, change: Callable[[str], str]) -> None:
        """Read, change and write a file under the lock (no lost update)."""
        target = self.resolve(relative)
        with self.locked():
            current = target.read_text(encoding="utf-8")
            self._write_unlocked(target, change(current))

    def append_log(self, line: str) -> None:
        target = self.root / "log.md"
        with self.locked():
            current = target.read_text(encoding="utf-8") if target.exists() else TEMPLATES["log.md"]
            if not current.endswith("\n"):
                current += "\n"
            self._write_unlocked(target, current + line.rstrip("\n") + "\n")

    def _index_unlocked(self, page: str) -> None:
        """List a new page in index.md (the memory's table of contents)."""
        if not page.endswith(".md") or page == "index.md":
            return
        index = self.root / "index.md"
        if not index.exists():
            return
        text = index.read_text(encoding="utf-8")
        if re.search(rf"\]\({re.escape(page)}\)", text):
            return
        title = Path(page).stem.replace("-", " ").replace("_", " ")
        if not text.endswith("\n"):
            text += "\n"
        self._write_unlocked(index, text + f"- [{title}]({page})\n")

    # -- recovery -----------------------------------------------------------------------

    def recover(self) -> list[str]:
        """Repair what a process killed mid-write left behind: its temporary files are
        removed and pages missing from index.md are listed; says what was done."""
        if not self.root.is_dir():
            return []
        done: list[str] = []
        with self.locked():  # every writer holds this lock, so no write is in progress
            for leftover in sorted(self.root.rglob(".*.tmp")):
                if leftover.is_file():
                    with contextlib.suppress(FileNotFoundError):
                        leftover.unlink()
                        done.append(f"removed {leftover.relative_to(self.root).as_posix()}")
            index = self.root / "index.md"
            if index.is_file():
                before = index.read_text(encoding="utf-8")
                for page in self.pages():
                    self._index_unlocked(page)
                after = index.read_text(encoding="utf-8")
                added = after[len(before) :].count("\n") if after.startswith(before) else 0
                if added:
                    done.append(f"listed {added} page(s) in index.md")
        return done

    # -- seeding ------------------------------------------------------------------------

    def seed(self) -> list[str]:
        """Create the layout's missing files (never overwrites); returns what was made."""
        made: list[str] = []
        with self.locked():
            private_dir(self.root / "assets")
            for relative, text in TEMPLATES.items():
                target = self.root / relative
                earlier = EARLIER_NAMES.get(relative.lower())
                if earlier is not None and (self.root / earlier).exists():
                    continue  # a folder from before the original's names keeps its pages
                if not target.exists():
                    self._write_unlocked(target, text.replace("{today}", today()))
                    made.append(relative)
        return made

    def is_seeded(self) -> bool:
        return all(
            (self.root / relative).exists()
            or (self.root / EARLIER_NAMES.get(relative.lower(), relative)).exists()
            for relative in TEMPLATES
        )


def ensure_front_matter(relative: str, text: str) -> str:
    """Pages keep YAML front matter: add one to a page written without it."""
    if not relative.endswith(".md") or text.lstrip().startswith("---"):
        return text
    stem = Path(relative).stem
    kind = "reference" if relative in REFERENCES else "topic"
    header = page_front_matter(stem.replace("-", " ").capitalize(), kind)
    return header.replace("{today}", today()) + text.lstrip("\n")
