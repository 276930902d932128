"""Hostile and malformed documents through `raf validate`: a located error for each, fast,
with no traceback and no hang (alias bombs, deep nesting, huge numbers and lists)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from raf.core.bounded_parse import (
    DocumentLimitError,
    ParseLimits,
    load_json,
    load_toml,
    load_yaml,
)

HEAD = "name: bomb\ninstructions: hi\n"
LAUGHS = "".join(
    f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)
BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + LAUGHS


def _corpus() -> dict[str, str | bytes]:
    """Name → content; every one is wrong in a way a parser can be made to suffer from."""
    deep = 10_000
    return {
        "bomb_top.yaml": BOMB,
        "bomb_under_model.yaml": HEAD
        + "model:\n"
        + "".join("  " + line + "\n" for line in BOMB.splitlines()),
        "bomb_merge_key.yaml": BOMB + "j: {<<: *i, k: 1}\n",
        "alias_to_itself.yaml": HEAD + "metadata: &m {self: *m}\n",
        "yaml_flow_deep.yaml": HEAD + "metadata: " + "[" * deep + "]" * deep + "\n",
        "yaml_block_deep.yaml": HEAD
        + "metadata:\n"
        + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(300)),
        "yaml_huge_int.yaml": HEAD + "maxToolRounds: " + "9" * 5000 + "\n",
        "yaml_many_tools.yaml": HEAD + "tools: [" + ",".join(["x"] * 300_000) + "]\n",
        "yaml_over_size.yaml": HEAD + "# " + "x" * (5 * 1024 * 1024) + "\n",
        "yaml_python_tag.yaml": HEAD + "model: !!python/object/apply:os.system ['true']\n",
        "yaml_two_documents.yaml": HEAD + "---\nname: second\n",
        "yaml_unclosed_quote.yaml": HEAD + 'description: "open\n',
        "yaml_tab.yaml": "name: x\n\tinstructions: y\n",
        "yaml_not_utf8.yaml": b"name: \xff\xfe\n",
        "yaml_scalar.yaml": "just text\n",
        "yaml_empty.yaml": "",
        "json_deep.json": "[" * deep + "]" * deep,
        "json_deep_objects.json": '{"a":' * deep + "1" + "}" * deep,
        "json_huge_int.json": '{"name": "x", "maxToolRounds": ' + "9" * 5000 + "}",
        "json_many_tools.json": '{"name": "x", "tools": [' + ",".join(['"x"'] * 300_000) + "]}",
        "json_truncated.json": '{"name": "x", "instr',
        "json_trailing_comma.json": '{"name": "x",}',
        "json_list.json": "[1, 2]",
        "toml_inline_deep.toml": "name = 'x'\nmetadata = " + "{a = " * 1000 + "1" + "}" * 1000,
        "toml_array_deep.toml": "name = 'x'\nmetadata = " + "[" * deep + "]" * deep,
        "toml_huge_int.toml": "name = 'x'\nmaxToolRounds = " + "9" * 5000 + "\n",
        "toml_huge_hex_int.toml": "name = 'x'\nmaxToolRounds = 0x" + "f" * 5000 + "\n",
        "toml_dotted_deep.toml": "name = 'x'\nmetadata" + ".a" * 5000 + " = 1\n",
        "toml_header_deep.toml": "name = 'x'\n[metadata" + ".t" * 5000 + "]\nx = 1\n",
        "yaml_huge_hex_int.yaml": HEAD + "maxToolRounds: 0x" + "f" * 5000 + "\n",
        "toml_duplicate.toml": "name = 'x'\nname = 'y'\n",
        "toml_bad.toml": "name = \n",
        # workflows whose formulas a parser could be made to suffer from
        "workflow_formula_parens.yaml": _workflow("(" * 5000 + "1" + ")" * 5000 + " > 100"),
        "workflow_formula_calls.yaml": _workflow("Upper(" * 2000 + '"a"' + ")" * 2000),
        "workflow_formula_signs.yaml": _workflow("-" * 5000 + "1 > 0"),
        "workflow_formula_long.yaml": _workflow("1" + " + 1" * 6000 + " > 0"),
    }


def _workflow(condition: str) -> str:
    """A declarative workflow whose one condition is the formula `condition`."""
    return (
        "kind: workflow\nname: formulas\ntrigger:\n  kind: OnConversationStart\n"
        "  id: start\n  actions:\n    - kind: If\n      id: check\n"
        f"      condition: ={condition}\n      then:\n        - kind: EndConversation\n"
        "          id: done\n"
    )


def _write(folder: Path) -> list[Path]:
    paths = []
    for name, content in _corpus().items():
        path = folder / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        paths.append(path)
    fifo = folder / "fifo.yaml"
    os.mkfifo(fifo)
    paths.append(fifo)
    return paths


def test_raf_validate_gives_a_located_error_for_every_hostile_document(tmp_path: Path) -> None:
    paths = _write(tmp_path)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "raf.cli", "validate", "--no-extras", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    elapsed = time.monotonic() - started
    assert "Traceback" not in done.stderr, done.stderr[-4000:]
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    report = done.stderr
    for path in paths:
        header = re.search(rf"^{re.escape(str(path))}: (\d+) problem\(s\)$", report, re.M)
        assert header, f"{path.name} was not reported as broken:\n{report[-4000:]}"
        first = report[header.end() :].splitlines()[1]
        assert first.startswith(f"  error: {path}"), f"{path.name}: {first}"
        if path.name != "fifo.yaml" and "over_size" not in path.name:
            assert re.match(rf"  error: {re.escape(str(path))}:\d+:\d+", first), first
        if path.name.startswith("workflow_formula"):  # refused for its formula, not its shape
            assert "condition: the expression does not parse" in first, first
    assert len(report) < 50_000  # nothing echoed at length
    assert elapsed < 60, f"took {elapsed:.1f} s"


def test_the_alias_bomb_fails_fast_and_located() -> None:
    assert len(BOMB) < 400
    started = time.monotonic()
    with pytest.raises(DocumentLimitError, match=r"^doc\.yaml:\d+:\d+: expands to more"):
        load_yaml(BOMB, file="doc.yaml")
    assert time.monotonic() - started < 2


@pytest.mark.parametrize(
    ("loader", "text", "message"),
    [
        (load_yaml, "a: &a [*a]", "contains it"),
        (load_yaml, "a: " + "[" * 100 + "]" * 100, "deeper than 64"),
        (load_yaml, "a: 1" + "0" * 200, "digits"),
        (load_json, '{"a": [' + "[" * 70 + "]" * 71 + "}", "deeper than 64"),
        (load_json, '{"s": "[[[[[[[[", "a": -' + "1" * 101 + "}", "digits"),
        (load_toml, "a = " + "[" * 65 + "]" * 65, "deeper than 64"),
        (load_toml, "s = '[[[[{{{'\na = " + "1" * 101, "digits"),
        (load_toml, "a" + ".a" * 5000 + " = 1", "deeper than 64"),
        (load_toml, "[t" + ".t" * 5000 + "]\nx = 1", "deeper than 64"),
        (load_toml, "[t" + ".t" * 40 + "]\n" + "a" + ".a" * 30 + " = 1", "deeper than 64"),
        (load_toml, "x = {" + "a." * 100 + "b = 1}", "deeper than 64"),
        (load_toml, "a = 0x" + "f" * 5000, "digits"),
        (load_toml, "a = 0o" + "7" * 101, "digits"),
        (load_toml, "a = 0b" + "1" * 101, "digits"),
        (load_toml, "a = " + "1_" * 101 + "1", "digits"),
        (load_yaml, "a: 0x" + "f" * 5000, "digits"),
        (load_yaml, "a: 0b" + "1" * 101, "digits"),
    ],
)
def test_each_limit_is_located(loader: object, text: str, message: str) -> None:
    with pytest.raises(DocumentLimitError, match=message) as caught:
        loader(text, file="f")  # type: ignore[operator]
    assert caught.value.line is not None and caught.value.column is not None


def test_integers_within_the_limit_load_in_every_form() -> None:
    text = "a = " + "1_" * 60 + "1\nb = 0x" + "f" * 100 + "\nc = '0x" + "f" * 500 + "'\n"
    data = load_toml(text)
    assert data["a"] == int("1" * 61) and data["b"] == int("f" * 100, 16)
    assert load_toml("[t" + ".t" * 62 + "]\nx = 1")["t"]["t"]["t"] is not None


def test_toml_keys_are_located_line_by_line() -> None:
    from raf.decl.documents.source import load_text

    text = (
        'name = "x"  # comment\n"quoted.key" = 1\na.b.c = 2\ns = """\nfake = 3\n"""\n'
        "[tools.web]\nkind = 'x'\n[[items]]\nn = 1\n[[items]]\nn = 2\n[items.sub]\nz = 1\n"
        "[metadata]\n" + "".join(f"key_{i} = {i}\n" for i in range(20_000))
    )
    doc = load_text(text, fmt="toml", file="f.toml")
    assert not doc.problems
    assert doc.keys[("quoted.key",)] == (2, 1)
    assert doc.keys[("a", "b", "c")] == (3, 1)
    assert ("fake",) not in doc.keys  # inside a multi-line string
    assert doc.keys[("tools", "web", "kind")] == (8, 1)
    assert doc.keys[("items", 0, "n")] == (10, 1)
    assert doc.keys[("items", 1, "n")] == (12, 1)
    assert doc.keys[("items", 1, "sub", "z")] == (14, 1)
    assert doc.keys[("metadata", "key_19999")] == (20_015, 1)


def test_brackets_in_strings_and_comments_do_not_count() -> None:
    text = 's = "' + "[" * 500 + '"\n# ' + "{" * 500 + "\nt = '''\n" + "[" * 500 + "'''\n"
    assert load_toml(text)["s"] == "[" * 500
    assert load_json('{"s": "' + "[" * 500 + '\\"["}')["s"].startswith("[")
    assert load_yaml("a: 12345678901234567890\nb: [1, {c: d}]") == {
        "a": 12345678901234567890,
        "b": [1, {"c": "d"}],
    }


def test_shared_but_bounded_aliases_still_load() -> None:
    text = "base: &b {x: 1}\none: *b\ntwo: {<<: *b, y: 2}\n"
    assert load_yaml(text)["two"] == {"x": 1, "y": 2}
    with pytest.raises(DocumentLimitError, match="more than 5 values"):
        load_yaml(text, limits=ParseLimits(max_nodes=5))
