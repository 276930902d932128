"""`raf schema`: print the JSON Schema of agent documents, for editors."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "schema", help="print the JSON Schema of agent documents (for editors)"
    )
    parser.add_argument("--compact", action="store_true", help="one line instead of indented")
    parser.set_defaults(handler=run_schema)


def run_schema(args: argparse.Namespace) -> int:
    from raf.decl.documents.schema import json_schema

    indent = None if args.compact else 2
    print(json.dumps(json_schema(), indent=indent, ensure_ascii=False))
    return 0
