"""`python -m raf.evals.bfcl [CATEGORIES] [--limit N [--offset K]] [--model SPEC] [--json F]`:
the same measurement as `raf eval --bfcl`, for scripts that do not go through `raf`."""

from __future__ import annotations

import argparse
import asyncio
import sys

from raf.core.chat_client import ChatClient
from raf.evals.bfcl.data import CATEGORIES, KNOWN_CATEGORIES, evenly_spaced, load
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


def sample_problem(names: list[str], limit: int | None, offset: int) -> str | None:
    """Why `--limit`/`--offset` cannot sample one of the categories, or None (checked before
    a model is loaded)."""
    for name in names:
        try:
            evenly_spaced(load(name), limit, offset)
        except ValueError as exc:
            return f"--offset {offset} for {name}: {exc}"
    return None


async def measure(
    client: ChatClient,
    names: list[str],
    limit: int | None,
    json_path: str | None,
    model: str,
    offset: int = 0,
) -> BfclReport:
    """Run `client` on the categories, say each item's verdict on stderr, print the table;
    the client is closed after."""
    try:
        report = await run_bfcl(
            client,
            names,
            limit=limit,
            offset=offset,
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
    parser.add_argument(
        "--offset",
        type=int,
        default=0,
        help="move each evenly spaced pick K items on (a held-out sample; needs --limit)",
    )
    parser.add_argument("--model", default=None, help="model spec (default: the default model)")
    parser.add_argument("--json", default=None, metavar="FILE.json", help="write every result")
    args = parser.parse_args(argv)
    problem = sample_problem(args.categories, args.limit, args.offset)
    if problem:
        parser.error(problem)
    from raf.clients.models import resolve_model

    client = resolve_model(args.model)
    name = args.model or str(getattr(client, "model", "") or "local")
    asyncio.run(measure(client, args.categories, args.limit, args.json, name, args.offset))
    return 0


if __name__ == "__main__":
    sys.exit(main())
