"""No `raf` command prints a character that hides or disguises text: a document, a
model or a file name holding a bidirectional override (U+202E), zero-width characters
or escape sequences reaches every command's output — standard output and standard
error, answers, errors, notices and converted documents — as plain text or as escapes
(in a document raf writes, the escape keeps the value)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from raf.core.safe_text import has_hidden_characters

from .helpers import raf, script

HIDING = "\u202e\u200b\u2066\x1b[8m\x1b]0;t\x07"
DOCUMENT = {
    "name": "helper",
    "description": f"reads{HIDING} files",
    "instructions": f"Be brief.{HIDING}\nSecond line \u200b.",
}


def _assert_plain(*outputs: str) -> None:
    for text in outputs:
        assert not has_hidden_characters(text), ascii(text)


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    name = f"agent{HIDING[:2]}.json"  # even the file's own name
    path = tmp_path / name
    path.write_text(json.dumps(DOCUMENT), encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_raf_convert_escapes_what_it_writes_and_keeps_the_value(
    tmp_path: Path, hostile: Path, fmt: str
) -> None:
    for dialect in ("raf", "maf"):
        done = raf(tmp_path, "convert", hostile.name, "--to", dialect, "--format", fmt)
        assert done.returncode == 0, done.stderr
        _assert_plain(done.stdout, done.stderr)
        back = yaml.safe_load(done.stdout) if fmt == "yaml" else json.loads(done.stdout)
        assert f"reads{HIDING} files" in _strings(back)  # escaped, not lost
    done = raf(tmp_path, "convert", hostile.name, "--to", "raf", "-o", f"out{HIDING[:1]}.yaml")
    assert done.returncode == 0, done.stderr
    _assert_plain(done.stdout, done.stderr)
    assert "→ out.yaml (raf)" in done.stderr


@pytest.mark.slow
def test_raf_validate_run_and_a_bad_document_print_plain_text(
    tmp_path: Path, hostile: Path
) -> None:
    done = raf(tmp_path, "validate", hostile.name)
    assert done.returncode == 0, done.stderr
    _assert_plain(done.stdout, done.stderr)

    bad = tmp_path / "bad.yaml"
    bad.write_text(f"name: x\ninstructions: hi\nmodel{HIDING}: 1\n", encoding="utf-8")
    done = raf(tmp_path, "validate", "bad.yaml")
    assert done.returncode == 1
    _assert_plain(done.stdout, done.stderr)

    reply = f"The answer{HIDING} is 4."
    done = raf(tmp_path, "run", hostile.name, "2+2?", "--model", script(tmp_path, [reply]))
    assert done.returncode == 0, done.stderr
    _assert_plain(done.stdout, done.stderr)
    assert "The answer" in done.stdout and "is 4." in done.stdout
    done = raf(tmp_path, "run", "missing\u202e.yaml", "hi", "--model", script(tmp_path, ["x"]))
    assert done.returncode != 0
    _assert_plain(done.stdout, done.stderr)
