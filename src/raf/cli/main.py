"""The `raf` program: parses the command line and hands off to one command module.

Each command lives in its own module under `raf.cli` with two functions:
`register(subparsers)` adds its parser, and the parser's `handler` default runs it.
Modules are imported only when listed here, so `raf --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMAND_MODULES: tuple[str, ...] = (
    "raf.cli.demo",
    "raf.cli.ask",
    "raf.cli.models",
    "raf.cli.chat",
    "raf.cli.run",
    "raf.cli.validate",
    "raf.cli.schema",
    "raf.cli.convert",
    "raf.cli.memory",
    "raf.cli.mcp",
    "raf.cli.serve",
    "raf.cli.eval",
)
"""Modules that each add one or more subcommands (add yours here)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="raf",
        description="raf: build, run and check LLM agents.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(name)
        module.register(subparsers)
    _remember_parsers(parser)
    return parser


def _remember_parsers(parser: argparse.ArgumentParser) -> None:
    """Give every subcommand's parser itself as a default, so that after parsing the
    namespace names the innermost command the user typed (`raf mcp serve` -> serve's)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(_raf_parser=sub)
                _remember_parsers(sub)


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line; an unknown option is reported with the usage of the
    subcommand it was given to, not the top-level usage."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        owner: argparse.ArgumentParser = getattr(args, "_raf_parser", None) or parser
        owner.error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """The `raf` program. Ctrl-C at any point after it starts, even while the command's
    modules are still importing, ends it with 130 and one line, never a traceback."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("raf: interrupted", file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None) -> int:
    from raf.core.errors import RafError

    parser = build_parser()
    args = parse(parser, argv)
    if args.version:
        from raf._version import __version__

        print(f"raf {__version__}")
        return 0
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args) or 0)
    except RafError as exc:
        from raf.cli.terminal_text import terminal_safe

        print(terminal_safe(f"raf: error: {exc}"), file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
