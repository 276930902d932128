"""`raf models pull|list|path`: fetch the embedded default model and show what is cached."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from raf.clients.local.model_store import (
    DEFAULT_MODEL,
    EMBEDDING_MODEL,
    EMBEDDING_TOKENIZER,
    KNOWN_MODELS,
    cache_dir,
    is_pulled,
    model_path,
    pull_model,
    verify,
)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "models", help="download the local model and show which models are cached"
    )
    commands = parser.add_subparsers(dest="models_command", metavar="ACTION")
    pull = commands.add_parser(
        "pull", help=f"download the default local model ({DEFAULT_MODEL.name}) into the cache"
    )
    pull.add_argument("--force", action="store_true", help="download again even if cached")
    pull.add_argument(
        "--embedder",
        action="store_true",
        help=f"download the local embedding model ({EMBEDDING_MODEL.name}) instead",
    )
    pull.set_defaults(handler=pull_command)
    listing = commands.add_parser("list", help="list the local models and whether they are cached")
    listing.add_argument(
        "--verify", action="store_true", help="rehash each cached file against its checksum"
    )
    listing.set_defaults(handler=list_command)
    path = commands.add_parser("path", help="print the path of the default model's GGUF file")
    path.set_defaults(handler=path_command)

    def show_help(_args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(handler=show_help)


def _progress(message: str) -> None:
    print(f"raf: {message}", file=sys.stderr, flush=True)


def pull_command(args: argparse.Namespace) -> int:
    sources = [EMBEDDING_MODEL, EMBEDDING_TOKENIZER] if args.embedder else [DEFAULT_MODEL]
    for source in sources:
        print(asyncio.run(pull_model(source, force=args.force, progress=_progress)))
    return 0


def list_command(args: argparse.Namespace) -> int:
    print(f"cache: {cache_dir()}")
    for name, source in KNOWN_MODELS.items():
        if args.verify:
            state = "cached, checksum ok" if verify(source) else "not cached or damaged"
        else:
            pull = source.pull_command.removesuffix(" --force")
            state = "cached" if is_pulled(source) else f"not cached ({pull})"
        size = f"{source.size / 1e6:.0f} MB"
        print(f"local  {name}  {size}  {source.license}  {state}")
        print(f"       {model_path(source)}")
    current = os.environ.get("RAF_MODEL") or "local (default)"
    print(f"RAF_MODEL: {current}")
    return 0


def path_command(args: argparse.Namespace) -> int:
    print(model_path(DEFAULT_MODEL))
    return 0 if is_pulled(DEFAULT_MODEL) else 1
