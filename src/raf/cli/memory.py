"""`raf memory init|validate|show DIR`: set up, check and read a super-brain folder."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "memory", help="check or read a persistent memory (super-brain) folder"
    )
    commands = parser.add_subparsers(dest="memory_command", metavar="ACTION", required=True)
    validate = commands.add_parser(
        "validate", help="check layout, front matter, links and the index; exit 1 on problems"
    )
    validate.add_argument("directory", type=Path)
    validate.set_defaults(handler=run_validate)
    init = commands.add_parser(
        "init", help="create a memory folder's layout (missing files only; never overwrites)"
    )
    init.add_argument("directory", type=Path)
    init.set_defaults(handler=run_init)
    show = commands.add_parser("show", help="print the memory's pages")
    show.add_argument("directory", type=Path)
    show.add_argument("--page", help="print only this page (for example USER.md)")
    show.add_argument("--log", type=int, default=10, help="changelog lines to show (default 10)")
    show.set_defaults(handler=run_show)


def run_validate(args: argparse.Namespace) -> int:
    from raf.cli.terminal_text import terminal_safe
    from raf.context.memory.store import MemoryStore
    from raf.context.memory.validate import validate_memory

    problems = validate_memory(args.directory)
    if problems:
        print(f"{args.directory}: {len(problems)} problem(s)")
        for problem in problems:  # page names and front matter are the agent's text
            print(terminal_safe(f"  {problem}"))
        return 1
    pages = len(MemoryStore(args.directory).pages())
    print(f"{args.directory}: valid ({pages} pages)")
    return 0


def run_init(args: argparse.Namespace) -> int:
    from raf.context.memory.store import MemoryStore
    from raf.core.errors import ConfigurationError

    store = MemoryStore(args.directory)
    if store.root.exists() and not store.root.is_dir():
        raise ConfigurationError(f"{args.directory}: a file, not a folder")
    try:
        made = store.seed()
    except OSError as exc:
        raise ConfigurationError(f"{args.directory}: cannot be set up ({exc})") from exc
    print(f"{args.directory}: created {', '.join(made)}" if made else f"{args.directory}: ok")
    return 0


def run_show(args: argparse.Namespace) -> int:
    from raf.cli.terminal_text import terminal_safe
    from raf.context.memory.store import MemoryPageError, MemoryStore

    store = MemoryStore(args.directory)
    if not store.root.is_dir():
        print(f"{args.directory}: not a directory")
        return 1
    if args.page:
        print(terminal_safe(store.read(args.page)), end="")
        return 0
    status = 0
    for page in store.pages():
        if page in ("SKILL.md", "AGENT.md"):
            continue
        try:
            text = store.read(page)
        except MemoryPageError as exc:
            print(terminal_safe(f"===== {page} =====\n(cannot be shown: {exc})\n"))
            status = 1
            continue
        if page == "log.md":
            lines = [line for line in text.splitlines() if line.startswith("- ")]
            text = "\n".join(lines[-args.log :]) + ("\n" if lines else "(empty)\n")
        print(terminal_safe(f"===== {page} ====="))
        print(terminal_safe(text.rstrip("\n")))
        print()
    return status
