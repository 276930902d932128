"""Front matter and API descriptions that try to exhaust the parser: refused fast, located."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from raf.context.skills import AgentSkillsProvider
from raf.context.wiki import WikiError, parse_page
from raf.core.errors import ConfigurationError
from raf.tools.openapi.loader import load_spec

LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


def _indented(text: str, by: str = "  ") -> str:
    return "".join(by + line + "\n" for line in text.splitlines())


def test_a_skill_whose_metadata_is_an_alias_bomb_is_skipped_fast(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    folder = root / "bomb"
    folder.mkdir(parents=True)
    front = "name: bomb\ndescription: Boom.\nmetadata:\n" + _indented(LAUGHS)
    (folder / "SKILL.md").write_text(f"---\n{front}---\nBody.\n", encoding="utf-8")
    good = root / "good"
    good.mkdir()
    (good / "SKILL.md").write_text("---\nname: good\ndescription: Fine.\n---\nx\n")
    started = time.monotonic()
    provider = AgentSkillsProvider(root)
    assert time.monotonic() - started < 5
    assert [s.name for s in provider.skills] == ["good"]
    warning = "\n".join(provider.warnings)
    assert "bomb/SKILL.md:" in warning and "expands to more than" in warning


def test_a_wiki_page_with_a_bomb_in_its_front_matter_is_a_located_wiki_error() -> None:
    text = "---\n" + LAUGHS + "---\nBody\n"
    with pytest.raises(WikiError, match=r"front matter of notes/boom:\d+:\d+: expands"):
        parse_page(text, space="notes", slug="boom")
    deep = "---\nx: " + "[" * 200 + "]" * 200 + "\n---\n"
    with pytest.raises(WikiError, match="deeper than 64"):
        parse_page(deep, space="notes", slug="deep")


async def test_an_openapi_description_that_is_a_bomb_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "api.yaml"
    spec.write_text("openapi: 3.0.0\nx:\n" + _indented(LAUGHS))
    with pytest.raises(ConfigurationError, match=r"api\.yaml:\d+:\d+: expands to more"):
        await load_spec(spec)
    deep = tmp_path / "deep.json"
    deep.write_text('{"openapi": "3.0.0", "x": ' + "[" * 5000 + "]" * 5000 + "}")
    with pytest.raises(ConfigurationError, match="deeper than 256"):
        await load_spec(deep)
