"""How long reading a TOML agent document takes as it grows: a document of N keys (an
agent with N `metadata` entries, one per line) is parsed and every key located, as
`raf validate` does, and the seconds are printed per size.

    python benchmarks/toml_locate.py [--keys 10000 20000]
"""

from __future__ import annotations

import argparse
import time

from raf.decl.documents.source import load_text


def document(keys: int) -> str:
    lines = ['name = "big"', 'instructions = "hi"', "[metadata]"]
    lines += [f'key_{i} = "value {i}"' for i in range(keys)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, nargs="+", default=[10_000, 20_000])
    args = parser.parse_args()
    for keys in args.keys:
        text = document(keys)
        started = time.perf_counter()
        doc = load_text(text, fmt="toml", file="big.toml")
        seconds = time.perf_counter() - started
        assert not doc.problems, doc.problems
        assert doc.keys[("metadata", f"key_{keys - 1}")] == (keys + 3, 1)
        print(f"{keys} keys: {seconds:.2f} s")


if __name__ == "__main__":
    main()
