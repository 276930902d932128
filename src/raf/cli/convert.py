"""`raf convert FILE --to raf|maf|original`: write an agent document in another dialect (a
workflow document, which each dialect writes alike, is written as read)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "convert",
        help="write an agent document in raf's, Microsoft Agent Framework's or the original "
        "framework's dialect",
    )
    parser.add_argument("file", metavar="FILE", help="the agent or workflow document (any dialect)")
    parser.add_argument(
        "--to", choices=("raf", "maf", "original"), required=True, help="the dialect to write"
    )
    parser.add_argument(
        "-o", "--output", metavar="OUT", help="write here (default: standard output)"
    )
    parser.add_argument(
        "--format",
        choices=("yaml", "json"),
        help="the output format (default: from OUT's suffix, else yaml)",
    )
    parser.set_defaults(handler=run_convert)


def run_convert(args: argparse.Namespace) -> int:
    from raf.cli.terminal_text import terminal_safe
    from raf.core.errors import ValidationProblems
    from raf.decl.convert import convert, dump, read_as_raf

    try:
        data, warnings = read_as_raf(args.file)
    except ValidationProblems as exc:
        for problem in exc.problems:
            print(terminal_safe(f"error: {problem}"), file=sys.stderr)  # quotes the document
        return 1
    for warning in warnings:
        print(terminal_safe(f"warning: {warning}"), file=sys.stderr)
    fmt = args.format or ("json" if args.output and args.output.endswith(".json") else "yaml")
    text = dump(convert(data, args.to, base_dir=Path(args.file).parent), fmt)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(terminal_safe(f"{args.file} → {args.output} ({args.to})"), file=sys.stderr)
    else:
        sys.stdout.write(text)  # hidden characters are escaped in the document's text
    return 0
