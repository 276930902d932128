"""Nothing raf loads from a store, a file or the network is deserialised in a way that can
run code: no pickle, marshal or shelve anywhere in raf, and YAML only through the safe
loader (`raf.core.bounded_parse.load_yaml`). The durable runs' DBOS records have their own
test (tests/durable/test_pickles.py), since DBOS pickles unless told otherwise."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "raf"
UNSAFE = re.compile(
    r"\b(?:import (?:pickle|marshal|shelve|dill|cloudpickle|jsonpickle)|"
    r"from (?:pickle|marshal|shelve) import|pickle\.loads?|marshal\.loads?|"
    r"yaml\.(?:load|load_all|unsafe_load|full_load)\s*\(|yaml\.(?:Unsafe|Full)?Loader\b)"
)


def test_no_module_of_raf_deserialises_with_code_execution() -> None:
    found = [
        f"{path.relative_to(SRC)}:{number}: {line.strip()}"
        for path in sorted(SRC.rglob("*.py"))
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if UNSAFE.search(line)
    ]
    assert found == []


def test_the_scan_recognises_what_it_forbids() -> None:
    for line in ("import pickle", "data = pickle.loads(x)", "yaml.load(text)", "yaml.Loader"):
        assert UNSAFE.search(line), line
    for line in ("yaml.safe_load(text)", "yaml.SafeLoader", "json.loads(text)"):
        assert not UNSAFE.search(line), line
