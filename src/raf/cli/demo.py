"""`raf demo`: an example agent with tools on the scripted model, showing a tool call and
an approval, so a new user sees the whole loop without a key or a download."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo", help="run an example agent: a tool call and an approval, on a scripted model"
    )
    parser.add_argument(
        "--deny", action="store_true", help="deny the cancellation instead of approving it"
    )
    parser.set_defaults(handler=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    from raf.cli.demo_agent import run_demo as demo

    return asyncio.run(demo(approve=not args.deny))
