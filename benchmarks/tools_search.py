"""Benchmark search_file and find_files against ripgrep and fd on a generated tree of
20,000 files, and read_file of a line range in a 100 MB file (peak RSS).

Run: python benchmarks/tools_search.py [--files N] [--runs N] [--big-mb N]
Needs the Debian packages ripgrep (rg) and fd-find (fdfind) for the comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from raf.core.tools import ToolContext
from raf.tools.files import FindFiles, ReadFile, SearchFile
from raf.tools.workspace import WorkspaceScope

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
]


def make_tree(root: Path, files: int) -> None:
    rng = random.Random(7)
    per_dir = 100
    for i in range(files):
        folder = root / f"d{i // per_dir // 20:02d}" / f"s{i // per_dir:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        ext = (".py", ".md", ".txt", ".rs")[i % 4]
        lines = [" ".join(rng.choices(WORDS, k=8)) for _ in range(40)]
        if i % 131 == 0:
            lines[rng.randrange(40)] += " needle_42 found"
        (folder / f"f{i:05d}{ext}").write_text("\n".join(lines) + "\n")


def timed(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def timed_async(fn: Callable[[], Awaitable[object]], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_rss_kib(code: str) -> int:
    """Peak RSS of a fresh interpreter that runs `code`."""
    script = code + "\nimport resource\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True
    )
    return int(out.stdout.strip().splitlines()[-1])


async def main(files: int, runs: int, big_mb: int) -> None:
    base = Path(tempfile.mkdtemp(prefix="raf-bench-"))
    try:
        root = base / "tree"
        start = time.perf_counter()
        make_tree(root, files)
        print(f"tree: {files} files generated in {time.perf_counter() - start:.1f}s")
        scope = WorkspaceScope(root, policy="deny")
        ctx = ToolContext()
        search_rg = SearchFile(scope)
        search_py = SearchFile(scope, use_ripgrep=False)
        find = FindFiles(scope)
        args = {"pattern": r"needle_\d+", "max_matches": 200}
        check = await search_rg.invoke(args, ctx)
        assert check.value["backend"] == "ripgrep", check
        matches = len(check.value["matches"])
        py_check = await search_py.invoke(args, ctx)
        assert len(py_check.value["matches"]) == matches
        rows: list[tuple[str, float]] = []
        rg = shutil.which("rg")
        fd = shutil.which("fdfind") or shutil.which("fd")
        if rg:
            rg_cmd = [rg, "--no-config", "-uu", "-n", r"needle_\d+", str(root)]
            rows.append(
                ("ripgrep", timed(lambda: subprocess.run(rg_cmd, capture_output=True), runs))
            )
        rows.append(("search_file (ripgrep backend)", await timed_async(
            lambda: search_rg.invoke(args, ctx), runs)))  # fmt: skip
        rows.append(("search_file (pure Python)", await timed_async(
            lambda: search_py.invoke(args, ctx), runs)))  # fmt: skip
        if fd:
            fd_cmd = [fd, "-uu", "-g", "*.py", str(root)]
            rows.append(
                ("fd -g '*.py'", timed(lambda: subprocess.run(fd_cmd, capture_output=True), runs))
            )
        find_args = {"pattern": "*.py"}
        rows.append(
            ("find_files '*.py'", await timed_async(lambda: find.invoke(find_args, ctx), runs))
        )
        print(f"\nsearch for r'needle_\\d+' ({matches} matching lines), median of {runs} runs:")
        for label, seconds in rows:
            print(f"  {label:34s} {seconds * 1000:8.1f} ms")
        if rg:
            ratio = rows[1][1] / rows[0][1]
            print(f"  search_file / ripgrep = {ratio:.2f}x (target <= 3x)")
            print(f"  pure Python / ripgrep = {rows[2][1] / rows[0][1]:.2f}x")

        big = base / "big.txt"
        line = ("x" * 60 + "\n").encode()
        with big.open("wb") as f:
            block = line * 16384
            for _ in range(big_mb * 1024 * 1024 // len(block)):
                f.write(block)
        total_lines = big.stat().st_size // len(line)
        start_line = total_lines - 1000
        reader = ReadFile(WorkspaceScope(base, policy="deny"))
        read_args = {"path": "big.txt", "start_line": start_line, "end_line": start_line + 99}
        t = await timed_async(lambda: reader.invoke(read_args, ctx), runs)
        setup = (
            "import asyncio\nfrom raf.core.tools import ToolContext\n"
            "from raf.tools.files import ReadFile\nfrom raf.tools.workspace import WorkspaceScope\n"
            f"tool = ReadFile(WorkspaceScope({str(base)!r}, policy='deny'))\n"
        )
        run_read = (
            f"r = asyncio.run(tool.invoke({{'path': 'big.txt', 'start_line': {start_line}, "
            f"'end_line': {start_line + 99}}}, ToolContext()))\n"
            "assert r.value['content'].count('\\n') == 100, r\n"
        )
        baseline = peak_rss_kib(setup)
        with_read = peak_rss_kib(setup + run_read)
        size_mb = big.stat().st_size / 1e6
        print(f"\nread_file lines {start_line}-{start_line + 99} of a {size_mb:.0f} MB file:")
        print(f"  time (median of {runs})            {t * 1000:8.1f} ms")
        naive = peak_rss_kib(f"lines = open({str(big)!r}).read().splitlines()")
        print(f"  peak RSS, interpreter + tool      {baseline / 1024:.1f} MiB")
        print(f"  peak RSS after the read           {with_read / 1024:.1f} MiB")
        print(f"  growth                            {(with_read - baseline) / 1024:.1f} MiB")
        print(f"  (naive read().splitlines(): peak  {naive / 1024:.1f} MiB)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--big-mb", type=int, default=100)
    options = parser.parse_args()
    asyncio.run(main(options.files, options.runs, options.big_mb))
