"""Wiki: typed pages with validated front matter, history, search, link graph, tools
and the provider in an agent run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raf.agent.builder import AgentBuilder
from raf.context.wiki import Wiki, WikiError, WikiIndex, WikiProvider, parse_page, wiki_tools
from raf.core.contents import FunctionResultContent
from raf.core.tools import ToolContext
from raf.testing import ScriptedChatClient, call, reply

PERSON = {
    "type": "object",
    "required": ["title", "type", "role"],
    "properties": {
        "role": {"type": "string"},
        "joined": {"type": "integer", "minimum": 2000},
    },
}


@pytest.fixture
def wiki(tmp_path: Path) -> Wiki:
    w = Wiki(tmp_path / "wiki", schemas={"person": PERSON})
    w.create(
        "Ada Lovelace",
        "Wrote the first program for the [[Analytical Engine]].",
        type="person",
        fields={"role": "mathematician", "joined": 2001},
        space="people",
    )
    w.create(
        "Analytical Engine",
        "A mechanical computer designed by [[people/ada-lovelace]] "
        "friend Charles Babbage. See also [[Difference Engine]].",
    )
    w.create(
        "Punched cards",
        "The engine read programs from punched cards, like the "
        "[[Analytical Engine|engine]] of Babbage.",
        space="main",
    )
    return w


def test_pages_round_trip_front_matter(wiki: Wiki) -> None:
    page = wiki.read("people/ada-lovelace")
    assert page.type == "person" and page.fields == {"role": "mathematician", "joined": 2001}
    assert page.title == "Ada Lovelace" and page.links == ["Analytical Engine"]
    raw = (wiki.root / "people" / "ada-lovelace.md").read_text(encoding="utf-8")
    assert raw.startswith("---\ntitle: Ada Lovelace\ntype: person\n")
    assert parse_page(raw, space="people", slug="ada-lovelace").fields["role"] == "mathematician"
    assert wiki.spaces() == ["main", "people"]
    assert wiki.read("Analytical Engine").ref == "main/analytical-engine"
    assert wiki.read("ada lovelace").ref == "people/ada-lovelace"  # by title across spaces


def test_writes_are_validated(wiki: Wiki) -> None:
    with pytest.raises(WikiError, match="'role' is a required property"):
        wiki.create("Grace Hopper", "Admiral.", type="person", space="people")
    with pytest.raises(WikiError, match="joined: 1990 is less than the minimum"):
        wiki.create(
            "Alan Turing",
            "x",
            type="person",
            space="people",
            fields={"role": "logician", "joined": 1990},
        )
    with pytest.raises(WikiError, match="unknown page type 'robot'"):
        wiki.create("R2", "beep", type="robot")
    with pytest.raises(WikiError, match="already exists"):
        wiki.create("Analytical Engine", "again")
    with pytest.raises(WikiError, match="space name"):
        wiki.create("X", "y", space="Bad Space")
    with pytest.raises(WikiError, match="role"):
        wiki.update("people/ada-lovelace", fields={"role": None})
    assert wiki.read("people/ada-lovelace").fields["role"] == "mathematician"


def test_updates_keep_history(wiki: Wiki) -> None:
    wiki.update("main/analytical-engine", body="Designed by Charles Babbage.", note="shorter")
    wiki.update("main/analytical-engine", fields={"built": False})
    history = wiki.history("main/analytical-engine")
    assert len(history) == 2
    assert "<!-- change: shorter -->" in history[0] and "[[Difference Engine]]" in history[0]
    assert "built" not in history[1] and "Designed by Charles Babbage." in history[1]
    page = wiki.read("main/analytical-engine")
    assert page.fields == {"built": False} and page.body.startswith("Designed by")


def test_schema_files_in_the_wiki_folder(tmp_path: Path) -> None:
    root = tmp_path / "w"
    (root / "_schemas").mkdir(parents=True)
    (root / "_schemas" / "decision.yaml").write_text(
        "type: object\nrequired: [status]\nproperties:\n  status: {enum: [proposed, accepted]}\n",
        encoding="utf-8",
    )
    w = Wiki(root)
    assert "decision" in w.schemas
    with pytest.raises(WikiError, match="status"):
        w.create("Use SQLite", "Because.", type="decision", fields={"status": "maybe"})
    w.create("Use SQLite", "Because.", type="decision", fields={"status": "accepted"})


def test_search_and_concept_graph(wiki: Wiki) -> None:
    index = WikiIndex(wiki)
    hits = index.search("mechanical computer")
    assert hits[0].ref == "main/analytical-engine" and "[mechanical]" in hits[0].snippet
    assert [h.ref for h in index.search("mathematician", space="people")] == ["people/ada-lovelace"]
    graph = index.graph()
    assert graph.edges["people/ada-lovelace"] == ["main/analytical-engine"]
    assert graph.edges["main/analytical-engine"] == ["people/ada-lovelace"]
    assert graph.missing["main/analytical-engine"] == ["Difference Engine"]
    assert graph.backlinks("main/analytical-engine") == [
        "main/punched-cards",
        "people/ada-lovelace",
    ]
    assert "main/punched-cards" in graph.neighbours("main/analytical-engine")
    json.dumps(graph.to_dict())
    wiki.create("Difference Engine", "An earlier machine.")  # the index notices new pages
    assert "main/analytical-engine" not in index.graph().missing
    assert index.search("earlier machine")[0].ref == "main/difference-engine"


async def test_tools_create_update_read_search(wiki: Wiki) -> None:
    tools = {t.name: t for t in wiki_tools(wiki)}
    assert set(tools) == {"wiki_search", "wiki_read", "wiki_create", "wiki_update"}
    assert all(t.kind == "wiki" for t in tools.values())
    ctx = ToolContext()
    bad = await tools["wiki_create"].invoke(
        {"title": "Grace Hopper", "body": "x", "type": "person", "space": "people"}, ctx
    )
    assert bad.is_error and "role" in (bad.error or "")
    made = await tools["wiki_create"].invoke(
        {
            "title": "Grace Hopper",
            "body": "Found a moth in the [[Analytical Engine]]?",
            "type": "person",
            "space": "people",
            "fields": {"role": "admiral"},
        },
        ctx,
    )
    assert made.value == {"created": "people/grace-hopper"}
    updated = await tools["wiki_update"].invoke(
        {"page": "people/grace-hopper", "fields": {"joined": 2005}, "note": "year"}, ctx
    )
    assert updated.value == {"updated": "people/grace-hopper", "versions": 1}
    read = await tools["wiki_read"].invoke({"page": "Analytical Engine"}, ctx)
    assert "people/grace-hopper" in read.value["backlinks"]
    found = await tools["wiki_search"].invoke({"query": "moth"}, ctx)
    assert found.value[0]["ref"] == "people/grace-hopper"
    missing = await tools["wiki_read"].invoke({"page": "nothing here"}, ctx)
    assert missing.is_error and "no wiki page" in (missing.error or "")


async def test_provider_in_an_agent_run(wiki: Wiki) -> None:
    provider = WikiProvider(wiki, name="team-wiki")
    model = ScriptedChatClient(
        [
            reply("", call("wiki_read", page="people/ada-lovelace", call_id="c1")),
            "She was a mathematician.",
        ]
    )
    agent = AgentBuilder("a").with_chat_client(model).with_context_provider(provider).build()
    response = await agent.run("Who wrote the program for the Analytical Engine?")
    assert response.text == "She was a mathematician."
    system = model.requests[0].messages[0].text
    assert "3 pages in spaces: main, people" in system
    assert "- person: role" in system
    assert "main/analytical-engine (Analytical Engine)" in system
    result = next(
        c for m in response.messages for c in m.contents if isinstance(c, FunctionResultContent)
    )
    assert result.result["fields"]["role"] == "mathematician"
    assert provider.kind == "wiki" and provider.name == "team-wiki"
    read_only = WikiProvider(wiki, read_only=True)
    assert {t.name for t in read_only.tools} == {"wiki_search", "wiki_read"}


async def test_broken_pages_bad_schemas_and_escaping_refs(wiki: Wiki, tmp_path: Path) -> None:
    (wiki.root / "main" / "bad.md").write_text("---\ntitle: [unclosed\n---\nbody\n", "utf-8")
    (tmp_path / "secret.md").write_text("---\ntitle: Secret\n---\nkeep out\n", "utf-8")
    # One broken page is left out (and named), the rest of the wiki keeps working.
    assert "main/bad" not in {p.ref for p in wiki.pages()}
    assert "not valid YAML" in wiki.broken["main/bad"]
    assert WikiIndex(wiki).search("engine")
    with pytest.raises(WikiError, match="front matter of main/bad is not valid YAML"):
        wiki.read("main/bad")
    # A reference never leaves the wiki directory.
    assert wiki.resolve("../secret") is None
    read = {t.name: t for t in wiki_tools(wiki)}["wiki_read"]
    result = await read.invoke({"page": "../secret"}, ToolContext())
    assert result.is_error and "keep out" not in str(result.value)
    # A schema that is not JSON Schema is refused when the wiki opens, with its type.
    with pytest.raises(WikiError, match="page type 'thing'.*properties/x/type"):
        Wiki(tmp_path / "other", schemas={"thing": {"properties": {"x": {"type": "nonsense"}}}})
    schemas = tmp_path / "third" / "_schemas"
    schemas.mkdir(parents=True)
    (schemas / "memo.yaml").write_text("type: [object\n", "utf-8")
    with pytest.raises(WikiError, match=r"memo\.yaml cannot be read"):
        Wiki(tmp_path / "third")
