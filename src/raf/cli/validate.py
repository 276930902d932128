"""`raf validate FILE|DIR…`: check agent and workflow documents (a folder: every document
in it, as `raf serve` reads it) and print every problem, located."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


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
        help="treat warnings (keys raf ignores, two spellings of one key, …) as errors",
    )
    parser.set_defaults(handler=run_validate)


def run_validate(args: argparse.Namespace) -> int:
    from raf.cli.terminal_text import terminal_safe
    from raf.core.errors import ValidationProblems
    from raf.decl.build_checks import model_extra_problems
    from raf.decl.document_file import documents_in
    from raf.decl.hosted import is_toolbox_file, load_toolbox_file
    from raf.decl.loader import load_file
    from raf.decl.workflow import is_workflow_file, load_workflow_file

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
        try:
            if is_workflow_file(file):
                workflow = load_workflow_file(file)
                for warning in workflow.warnings:
                    print(terminal_safe(f"  warning: {warning}"), file=sys.stderr)
                if args.strict and workflow.warnings:
                    failed += 1
                    print(f"{file}: warnings are errors under --strict", file=sys.stderr)
                    continue
                print(terminal_safe(f"{file}: ok (workflow {workflow.name})"))
                continue
            if is_toolbox_file(file):
                toolbox = load_toolbox_file(file)
                for warning in toolbox.warnings:
                    print(terminal_safe(f"  warning: {warning}"), file=sys.stderr)
                print(f"{file}: ok (toolbox of {len(toolbox.decl.tools)} tools)")
                continue
            loaded = load_file(
                file,
                check_extras=not args.no_extras,
                strict=args.strict,
                unset_env_is_warning=True,
            )
        except ValidationProblems as exc:
            failed += 1
            print(f"{file}: {len(exc.problems)} problem(s)", file=sys.stderr)
            for problem in exc.problems:
                print(terminal_safe(f"  error: {problem}"), file=sys.stderr)
            for warning in getattr(exc, "warnings", []):
                print(terminal_safe(f"  warning: {warning}"), file=sys.stderr)
            continue
        missing = [] if args.no_extras else model_extra_problems(loaded)
        if missing:
            failed += 1
            print(f"{file}: {len(missing)} problem(s)", file=sys.stderr)
            for problem in missing:
                print(terminal_safe(f"  error: {problem}"), file=sys.stderr)
        for warning in loaded.warnings:
            print(terminal_safe(f"  warning: {warning}"), file=sys.stderr)
        if not missing:
            print(f"{file}: ok ({loaded.decl.name})")
    return 1 if failed else 0
