"""File tools scoped to the memory folder: read-only ones for the agent, read/write ones
for the curator."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

from raf.context.memory.store import (
    MemoryPageError,
    MemoryStore,
    OutsideMemoryError,
    ensure_front_matter,
    today,
)
from raf.core.errors import ToolExecutionError
from raf.core.function_tool import FunctionTool
from raf.core.tools import Tool


async def _read(store: MemoryStore, path: str) -> str:
    try:
        target = store.resolve(path)
    except OutsideMemoryError as exc:
        raise ToolExecutionError(str(exc)) from None
    if not target.is_file():
        target = await asyncio.to_thread(store.find, path)
    if not target.is_file():
        listing = ", ".join(await asyncio.to_thread(store.pages))
        raise ToolExecutionError(f"no memory page {path!r}; pages: {listing}")
    try:
        return await asyncio.to_thread(store.read, path)
    except MemoryPageError as exc:
        raise ToolExecutionError(str(exc)) from None


def reader_tools(store: MemoryStore) -> list[Tool]:
    """`read_memory` and `list_memory`, for the agent the memory serves."""

    async def read_memory(path: str = "index.md") -> str:
        """Read a page of your persistent memory (start with index.md).

        Args:
            path: the page's path in the memory folder, for example USER.md
        """
        return await _read(store, path)

    async def list_memory() -> list[str]:
        """List the pages of your persistent memory."""
        return await asyncio.to_thread(store.pages)

    return [
        FunctionTool(read_memory, kind="memory", run_in_thread=False),
        FunctionTool(list_memory, kind="memory", run_in_thread=False),
    ]


def curator_tools(store: MemoryStore, changed: set[str]) -> list[Tool]:
    """The curator's only tools; every path stays in the memory folder and each change is
    recorded in `changed`."""

    def check(path: str) -> str:
        try:
            target = store.find(path)  # an existing page under another spelling is that page
        except OutsideMemoryError as exc:
            raise ToolExecutionError(str(exc)) from None
        if target.suffix != ".md":
            raise ToolExecutionError(f"{path!r}: only Markdown pages (.md) can be written")
        return store.relative(target)

    async def list_files() -> list[str]:
        """List every file of the memory folder."""
        return await asyncio.to_thread(store.files)

    async def read_file(path: str) -> str:
        """Read a page of the memory folder.

        Args:
            path: the page's path relative to the memory folder
        """
        return await _read(store, path)

    async def write_file(path: str, content: str) -> str:
        """Write a whole page (creating it if needed); read it first and keep what stays true.

        Args:
            path: the page's path relative to the memory folder, ending in .md
            content: the page's full new text, YAML front matter included
        """
        relative = check(path)
        text = ensure_front_matter(relative, content)
        created = await asyncio.to_thread(store.write, relative, text)
        changed.add(relative)
        return f"{'created' if created else 'updated'} {relative}"

    async def edit_file(path: str, old_text: str, new_text: str) -> str:
        """Replace one exact passage of a page (it must occur exactly once).

        Args:
            path: the page's path relative to the memory folder
            old_text: the exact text to replace
            new_text: the text to put in its place
        """
        relative = check(path)

        def change(current: str) -> str:
            found = current.count(old_text) if old_text else 0
            if found != 1:
                raise ToolExecutionError(
                    f"{relative}: the text to replace occurs {found} times; it must occur once"
                )
            return current.replace(old_text, new_text, 1)

        await _update(store, relative, change)
        changed.add(relative)
        return f"edited {relative}"

    async def supersede_fact(path: str, old_text: str, new_text: str) -> str:
        """Mark a fact as no longer true and record the fact that replaces it; the old text
        is struck through with today's date, never deleted.

        Args:
            path: the page holding the old fact
            old_text: the exact text of the old fact (occurring once)
            new_text: the new fact, written on its own line after the old one
        """
        relative = check(path)
        stamp = today()

        def change(current: str) -> str:
            found = current.count(old_text) if old_text.strip() else 0
            if found != 1:
                raise ToolExecutionError(
                    f"{relative}: the old fact occurs {found} times; it must occur once"
                )
            start = current.index(old_text)
            line_start = current.rfind("\n", 0, start) + 1
            line_end = current.find("\n", start)
            line_end = len(current) if line_end == -1 else line_end
            line = current[line_start:line_end]
            prefix = re.match(r"^\s*(?:[-*+]\s+|\d+\.\s+)?", line)
            lead = prefix.group(0) if prefix else ""
            struck = line.replace(old_text.strip(), f"~~{old_text.strip()}~~ (superseded {stamp})")
            addition = f"{lead}{new_text.strip()}"
            return current[:line_start] + struck + "\n" + addition + current[line_end:]

        await _update(store, relative, change)
        changed.add(relative)
        return f"superseded a fact in {relative}"

    return [
        FunctionTool(fn, kind="memory", run_in_thread=False)
        for fn in (list_files, read_file, write_file, edit_file, supersede_fact)
    ]


async def _update(store: MemoryStore, relative: str, change: Callable[[str], str]) -> None:
    if not (store.root / relative).is_file():
        raise ToolExecutionError(f"no memory page {relative!r}; create it with write_file")
    await asyncio.to_thread(store.update, relative, change)
