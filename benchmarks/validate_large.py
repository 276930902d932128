"""How long `raf validate`'s check takes on huge documents, beside a floor: an agent
document with 20 000 unknown top-level keys (20 000 problems) and a graph workflow of
10 000 nodes each naming an agent nobody declares (10 000 warnings), each checked the way
`raf validate` checks it (`raf.decl.check_file.check_file`) and its report rendered (at
most a screenful per kind of problem). The floor is PyYAML's C loader reading the same
file and nothing else. Best of `--repeat` runs; the report's size is printed too.

    python benchmarks/validate_large.py [--keys 20000] [--nodes 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from raf.cli.validate import bounded
from raf.decl.check_file import check_file


def keys_document(keys: int) -> str:
    data: dict[str, Any] = {"name": "big", "instructions": "hi", "model": "openai:gpt-4o"}
    data.update({f"unknown_key_{i}": i for i in range(keys)})
    return yaml.safe_dump(data, sort_keys=False)


def nodes_document(nodes: int) -> str:
    data = {
        "kind": "workflow",
        "name": "big",
        "start_node_id": "n0",
        "nodes": [{"id": f"n{i}", "type": "agent", "agent": "missing"} for i in range(nodes)],
        "edges": [{"source": f"n{i}", "target": f"n{i + 1}"} for i in range(nodes - 1)],
    }
    return yaml.safe_dump(data, sort_keys=False)


def best(repeat: int, work: Callable[[], Any]) -> tuple[float, Any]:
    seconds, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = work()
        seconds = min(seconds, time.perf_counter() - started)
    return seconds, result


def measure(label: str, path: Path, repeat: int) -> None:
    text = path.read_text(encoding="utf-8")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    floor, _ = best(repeat, lambda: yaml.load(text, Loader=loader))

    def validate() -> list[str]:
        checked = check_file(path, check_extras=False)
        return bounded(checked.problems, "error") + bounded(checked.warnings, "warning")

    seconds, lines = best(repeat, validate)
    report = sum(len(line) + 1 for line in lines)
    print(
        f"{label:<28} {path.stat().st_size / 1e6:5.1f} MB  floor {floor:6.2f} s  "
        f"validate {seconds:6.2f} s  ({seconds / floor:4.1f}x)  report {len(lines)} lines, "
        f"{report / 1e3:.1f} kB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        keys = Path(folder) / "keys.yaml"
        keys.write_text(keys_document(args.keys), encoding="utf-8")
        nodes = Path(folder) / "nodes.yaml"
        nodes.write_text(nodes_document(args.nodes), encoding="utf-8")
        measure(f"{args.keys} unknown keys", keys, args.repeat)
        measure(f"{args.nodes} graph nodes", nodes, args.repeat)


if __name__ == "__main__":
    main()
