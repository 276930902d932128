"""`raf validate FILE|DIR…`: check agent and workflow documents (a folder: every document
in it, as `raf serve` reads it) and print every problem, located: the same check `raf run`
makes before it builds, so what one refuses the other reports."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raf.core.errors import Problem

SCREENFUL = 20
"""Problems (or warnings) of one kind printed per document; the rest are counted."""


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "validate",
        help="check agent and workflow documents (YAML, JSON, TOML); exit 1 when one has problems",
    )
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE|DIR",
        help="documents to check; a folder: each .yaml, .yml, .json and .toml file in it",
    )
    parser.add_argument(
        "--no-extras", action="store_true", help="do not check that integrations are installed"
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="treat warnings (keys raf ignores, unset variables, unbound tools, …) as errors",
    )
    from raf.cli.tool_option import add_tools_option

    add_tools_option(parser)
    parser.set_defaults(handler=run_validate)


def run_validate(args: argparse.Namespace) -> int:
    from raf.cli.terminal_text import terminal_safe
    from raf.cli.tool_option import EXIT_BAD_SPEC, loaded_tools
    from raf.decl.agent.tool_bindings import entry_point_names
    from raf.decl.check_file import check_file
    from raf.decl.documents.build_checks import model_extra_problems
    from raf.decl.documents.document_file import documents_in

    specs = loaded_tools(args.tools)
    if specs is None:
        return EXIT_BAD_SPEC
    bound = set(specs) | entry_point_names()
    failed = 0
    files: list[str] = []
    for given in args.files:
        if not Path(given).is_dir():
            files.append(given)
            continue
        found = documents_in(given)
        if not found:
            failed += 1
            print(
                terminal_safe(f"{given}: no documents in this folder (.yaml, .yml, .json, .toml)"),
                file=sys.stderr,
            )
        files.extend(str(p) for p in found)
    for file in files:
        checked = check_file(file, bound_tools=bound, check_extras=not args.no_extras)
        problems = list(checked.problems)
        if checked.agent is not None and not args.no_extras:
            problems += model_extra_problems(checked.agent)
        if args.strict and not problems and checked.warnings:
            problems = list(checked.warnings)
            print(f"{file}: warnings are errors under --strict", file=sys.stderr)
            checked.warnings = []
        failed += bool(problems)
        report_problems(file, problems, checked.warnings)
        if not problems:
            print(terminal_safe(f"{file}: ok ({checked.summary})"))
    return 1 if failed else 0


def report_problems(file: str, problems: Sequence[Problem], warnings: Sequence[Problem]) -> None:
    """A document's problems and warnings on stderr, at most a screenful of each kind."""
    from raf.cli.terminal_text import terminal_safe

    if problems:
        print(terminal_safe(f"{file}: {len(problems)} problem(s)"), file=sys.stderr)
    for line in bounded(problems, "error") + bounded(warnings, "warning"):
        print(terminal_safe(line), file=sys.stderr)


_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|\d+")


def problem_kind(problem: Problem) -> str:
    """What problems of one kind share: the message without its quoted names and numbers
    (`unknown key 'a'` and `unknown key 'b'` are one kind)."""
    return _VARYING.sub("_", problem.message)


def bounded(problems: Sequence[Problem], label: str, limit: int = SCREENFUL) -> list[str]:
    """The report's lines: at most `limit` problems of each kind, in document order, and
    a line per kind saying how many more there are."""
    shown: dict[str, int] = {}
    first: dict[str, Problem] = {}
    lines: list[str] = []
    for problem in problems:
        kind = problem_kind(problem)
        first.setdefault(kind, problem)
        shown[kind] = shown.get(kind, 0) + 1
        if shown[kind] <= limit:
            lines.append(f"  {label}: {problem}")
    for kind, count in shown.items():
        if count > limit:
            lines.append(
                f"  … and {count - limit} more {label}s like {first[kind].message!r} (not shown)"
            )
    return lines
