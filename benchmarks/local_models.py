"""Small local models on raf's shipped eval (`raf.evals.local_suite`): accuracy per
category, median and p95 seconds per case, time to the first answer (model load
included) and peak RSS, one process per configuration.

    python benchmarks/local_models.py --model local --tool-mode grammar --temperature 0
    python benchmarks/local_models.py --matrix MODEL.gguf ... [--temperatures 0 0.7]

    python benchmarks/local_models.py --suite notes --tool-mode auto
    python benchmarks/local_models.py --suite notes-heldout --tool-mode auto
    python benchmarks/local_models.py --suite bfcl --bfcl-limits 40 20 30 --tool-mode auto

`--suite` picks what is measured: `local` (the shipped toolbox eval), `notes` (the
notes-folder eval, `raf.evals.notes_suite`: file tools on a small folder), `notes-heldout`
(ten other questions on another folder, never tuned on) or `bfcl` (BFCL's
simple_python, multiple and irrelevance, evenly spaced samples of `--bfcl-limits` items,
scored by BFCL's AST rules; needs `pip install --no-deps bfcl-eval`).
`--model` is `local` (the default model) or a GGUF path. `--matrix` runs every model with
each tool mode (`staged`: the tool chosen from the message's words, its arguments decoded
from the live context, the answer in plain text; `grammar`: decoding constrained to a tool
call or an answer; `native`: the chat template's own format) at each temperature, in a
fresh process each, and prints a Markdown table; `--json-dir` keeps every report;
`--categories` runs only those categories.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CATEGORIES = (
    "plain",
    "single_tool",
    "two_arguments",
    "choose_tool",
    "read_result",
    "refuse",
    "two_step",
)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


async def one_config(args: argparse.Namespace) -> dict[str, Any]:
    from raf.clients.local.client import LocalChatClient
    from raf.evals.local_suite import suite_agent, suite_dataset

    path = None if args.model == "local" else args.model
    client = LocalChatClient(
        path, tool_mode=args.tool_mode, temperature=args.temperature, seed=args.seed
    )
    dataset = suite_dataset()
    if args.categories:
        dataset.cases = [c for c in dataset.cases if c.tags[0] in args.categories]
    if args.per_category:
        kept: dict[str, int] = {}
        cases = []
        for case in dataset.cases:
            tag = case.tags[0]
            if kept.get(tag, 0) < args.per_category:
                kept[tag] = kept.get(tag, 0) + 1
                cases.append(case)
        dataset.cases = cases
    agent = suite_agent(client, max_tokens=args.max_tokens)
    started = time.perf_counter()
    first = await agent.run("What is the capital of France?")
    first_answer = time.perf_counter() - started
    if args.suite == "bfcl":
        return await bfcl_config(args, client, first_answer, first.text)
    if args.suite in ("notes", "notes-heldout"):
        import tempfile

        from raf.evals.notes_suite import (
            HELDOUT,
            heldout_dataset,
            make_notes,
            notes_agent,
            notes_dataset,
        )

        heldout = args.suite == "notes-heldout"
        dataset = heldout_dataset() if heldout else notes_dataset()
        folder = Path(tempfile.mkdtemp(prefix="raf-notes-"))
        agent = notes_agent(client, make_notes(folder, HELDOUT if heldout else None))
    report = await dataset.evaluate(agent, concurrency=1, progress=None)
    await client.aclose()
    if args.verbose:
        for result in report.results:
            row = result.to_dict()
            keep = {k: row[k] for k in ("case", "status", "text", "evaluations")}
            print(json.dumps(keep, default=str)[:1200], file=sys.stderr)
    durations = [r.duration for r in report.results]
    name = Path(args.model).stem if path else "smollm2-135m (default)"
    report.name = f"{name} {args.tool_mode} t={args.temperature}"
    if args.json_dir:
        folder = Path(args.json_dir)
        folder.mkdir(parents=True, exist_ok=True)
        safe = report.name.replace(" ", "_").replace("/", "_").replace("=", "")
        report.write_json(folder / f"{safe}.json")
    return {
        "model": name,
        "size_mb": round((Path(path).stat().st_size if path else 98_362_432) / 1e6),
        "tool_mode": args.tool_mode,
        "temperature": args.temperature,
        "cases": len(report.results),
        "pass_rate": round(report.pass_rate, 3),
        "by_tag": {tag: f"{p}/{n}" for tag, (p, n) in report.by_tag().items()},
        "median_s": round(statistics.median(durations), 2),
        "p95_s": round(percentile(durations, 95), 2),
        "first_answer_s": round(first_answer, 2),
        "first_answer": first.text[:80],
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


async def bfcl_config(
    args: argparse.Namespace, client: Any, first_answer: float, first_text: str
) -> dict[str, Any]:
    """BFCL's three categories on `client`, `--bfcl-limits` items each, evenly spaced (each
    pick moved `--bfcl-offset` items on)."""
    from raf.evals.bfcl import CATEGORIES, run_bfcl

    rows: dict[str, str] = {}
    seconds: list[float] = []
    for category, limit in zip(CATEGORIES, args.bfcl_limits, strict=True):
        report = await run_bfcl(client, [category], limit=limit, offset=args.bfcl_offset)
        right, count = report.by_category()[category]
        rows[category] = f"{right}/{count}"
        seconds += [r.seconds for r in report.results]
        if args.json_dir:
            folder = Path(args.json_dir)
            folder.mkdir(parents=True, exist_ok=True)
            report.write_json(folder / f"bfcl_{Path(args.model).stem}_{category}.json")
    await client.aclose()
    path = None if args.model == "local" else args.model
    return {
        "model": Path(args.model).stem if path else "smollm2-135m (default)",
        "size_mb": round((Path(path).stat().st_size if path else 98_362_432) / 1e6),
        "tool_mode": args.tool_mode,
        "bfcl": rows,
        "median_s": round(statistics.median(seconds), 2),
        "first_answer_s": round(first_answer, 2),
        "first_answer": first_text[:80],
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def table(rows: list[dict[str, Any]]) -> str:
    head = [
        "model",
        "tools",
        "temp",
        "all",
        *CATEGORIES,
        "median s",
        "p95 s",
        "1st answer s",
        "RSS MB",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [
            f"{row['model']} ({row['size_mb']} MB)",
            row["tool_mode"],
            f"{row['temperature']:g}",
            f"{row['pass_rate']:.0%}",
            *(row["by_tag"].get(c, "-") for c in CATEGORIES),
            f"{row['median_s']:.1f}",
            f"{row['p95_s']:.1f}",
            f"{row['first_answer_s']:.1f}",
            str(row["rss_mb"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local")
    parser.add_argument(
        "--tool-mode", default="grammar", choices=("staged", "grammar", "native", "auto")
    )
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--per-category", type=int, default=0, help="cases per category (0: all)")
    parser.add_argument(
        "--categories", nargs="*", default=[], help="only these categories (default: all)"
    )
    parser.add_argument("--json-dir", default="")
    parser.add_argument(
        "--suite", default="local", choices=("local", "notes", "notes-heldout", "bfcl")
    )
    parser.add_argument(
        "--bfcl-limits",
        nargs=3,
        type=int,
        default=[40, 20, 30],
        metavar=("SIMPLE", "MULTIPLE", "IRRELEVANCE"),
    )
    parser.add_argument(
        "--bfcl-offset", type=int, default=0, help="move each BFCL pick K items on (held out)"
    )
    parser.add_argument("--verbose", action="store_true", help="every case's result on stderr")
    parser.add_argument("--matrix", nargs="*", metavar="MODEL", help="models to run every way")
    parser.add_argument("--temperatures", nargs="*", type=float, default=[0.0])
    args = parser.parse_args()
    if args.matrix is None:
        print(json.dumps(asyncio.run(one_config(args))))
        return
    rows = []
    for model in args.matrix:
        for temperature in args.temperatures:
            for mode in ("staged", "grammar", "native"):
                command = [
                    sys.executable, __file__, "--model", model, "--tool-mode", mode,
                    "--temperature", str(temperature), "--seed", str(args.seed),
                    "--max-tokens", str(args.max_tokens),
                    "--per-category", str(args.per_category), "--json-dir", args.json_dir,
                ]  # fmt: skip
                done = subprocess.run(
                    command, capture_output=True, text=True, timeout=7200, check=False
                )
                if done.returncode != 0:
                    print(f"{model} {mode} t={temperature} failed:\n{done.stderr[-2000:]}")
                    continue
                row = json.loads(done.stdout.strip().splitlines()[-1])
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
