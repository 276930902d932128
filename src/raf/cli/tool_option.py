"""`--tools module:function`, the one option every command that loads a document takes
(`raf run`, `chat`, `validate`, `serve`, `ui`, `acp`, `eval`, `mcp serve`), read the same
way everywhere: a bad spec is a usage error (exit 2) said before anything starts."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from raf.decl.agent.tool_bindings import Binding

EXIT_BAD_SPEC = 2
"""What a command returns for a `--tools` spec it cannot load (a usage error)."""


def add_tools_option(parser: argparse.ArgumentParser) -> None:
    """Add `--tools MODULE:FUNCTION` (repeatable) to a command."""
    parser.add_argument(
        "--tools",
        metavar="MODULE:FUNCTION",
        action="append",
        default=[],
        help="bind the document's function tool of that name to this Python function "
        "(NAME=MODULE:FUNCTION binds it under NAME; repeat for several); installed "
        "entry points in group 'raf.tools' bind the rest",
    )


def loaded_tools(specs: Sequence[str], program: str = "raf") -> dict[str, Binding] | None:
    """The `--tools` specs loaded, by the name each binds; None (the error said on stderr
    as `PROGRAM: error: …`) when one cannot be loaded: the command then exits 2."""
    from raf.cli.terminal_text import terminal_safe
    from raf.core.errors import ConfigurationError
    from raf.decl.agent.tool_bindings import load_specs

    try:
        return load_specs(specs)
    except ConfigurationError as exc:
        print(terminal_safe(f"{program}: error: {exc}"), file=sys.stderr)
        return None
