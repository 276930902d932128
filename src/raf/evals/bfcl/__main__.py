"""`python -m raf.evals.bfcl [CATEGORIES] [--limit N] [--model SPEC] [--json FILE]`: the
same measurement as `raf eval --bfcl`, for scripts that do not go through the `raf` program."""

from __future__ import annotations

import argparse
import asyncio
import sys

from raf.core.chat_client import ChatClient
from raf.evals.bfcl.data import CATEGORIES, KNOWN_CATEGORIES
from raf.evals.bfcl.run import BfclReport, run_bfcl


def categories(text: str) -> list[str]:
    """A comma-separated list of BFCL categories raf scores."""
    names = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in names if c not in KNOWN_CATEGORIES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown BFCL category {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(KNOWN_CATEGORIES)}"
        )
    return names


async def measure(
    client: ChatClient, names: list[str], limit: int | None, json_path: str | None, model: str
) -> BfclReport:
    """Run `client` on the categories, say each item's verdict on stderr, print the table;
    the client is closed after."""
    try:
        report = await run_bfcl(
            client,
            names,
            limit=limit,
            model=model,
            progress=lambda r: print(
                f"{r.id}: {'right' if r.verdict.valid else 'wrong'} {r.calls}",
                file=sys.stderr,
                flush=True,
            ),
        )
    finally:
        close = getattr(client, "aclose", None)
        if close is not None:
            await close()
    print(report.table())
    if json_path:
        report.write_json(json_path)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m raf.evals.bfcl", description=__doc__)
    parser.add_argument("categories", nargs="?", type=categories, default=list(CATEGORIES))
    parser.add_argument("--limit", type=int, default=None, help="items per category, evenly spaced")
    parser.add_argument("--model", default=None, help="model spec (default: the default model)")
    parser.add_argument("--json", default=None, metavar="FILE.json", help="write every result")
    args = parser.parse_args(argv)
    from raf.clients.models import resolve_model

    client = resolve_model(args.model)
    name = args.model or str(getattr(client, "model", "") or "local")
    asyncio.run(measure(client, args.categories, args.limit, args.json, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
