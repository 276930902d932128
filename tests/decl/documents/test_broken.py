"""A corpus of broken documents: each must report exactly the problems written at its end
(`# expect: LINE:COL KEY.PATH: message`, warnings as `# warn: ...`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf.core import errors as core_errors
from raf.core.errors import ValidationProblems
from raf.decl.documents import extras
from raf.decl.documents.loader import load_file

BROKEN = Path(__file__).parent / "broken"
DOCUMENTS = sorted(BROKEN.glob("*.yaml"))


def expected(path: Path, marker: str) -> list[str]:
    return [
        line[len(marker) :]
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith(marker)
    ]


def rendered(problem) -> str:
    return f"{problem.line}:{problem.column} {problem.key_path or '-'}: {problem.message}"


def test_the_corpus_is_large_enough():
    assert len(DOCUMENTS) >= 30
    assert all(expected(p, "# expect: ") or expected(p, "# warn: ") for p in DOCUMENTS)


@pytest.mark.parametrize("path", DOCUMENTS, ids=[p.stem for p in DOCUMENTS])
def test_broken_document(path, monkeypatch):
    available = extras.module_available
    # the 'rag' extra is absent for this corpus, whatever this machine has installed
    monkeypatch.setattr(extras, "module_available", lambda m: m != "pypdf" and available(m))
    # install hints as a user of the published package reads them, not this checkout's
    monkeypatch.setattr(core_errors, "_checkout", lambda: None)
    monkeypatch.chdir(BROKEN)
    errors = expected(path, "# expect: ")
    warnings = expected(path, "# warn: ")
    if errors:
        with pytest.raises(ValidationProblems) as info:
            load_file(path.name)
        assert [rendered(p) for p in info.value.problems] == errors
        assert all(p.file == path.name for p in info.value.problems)
        assert [rendered(w) for w in getattr(info.value, "warnings", [])] == warnings
        lines = str(info.value).splitlines()[1:]
        assert [line.strip().startswith(f"{path.name}:") for line in lines] == [True] * len(errors)
    else:
        loaded = load_file(path.name)
        assert [rendered(w) for w in loaded.warnings] == warnings
