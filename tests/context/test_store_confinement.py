"""Every store that turns a name into a file (wiki, knowledge, memory, skills) resolves it
through the same fd walk as the file tools: the hostile links of the workspace corpus,
planted in each store's folder, never let a read or a write leave it."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from raf.context.knowledge import KnowledgeIndex
from raf.context.memory.store import MemoryPageError, MemoryStore, OutsideMemoryError
from raf.context.skills import AgentSkillsProvider
from raf.context.wiki.store import Wiki, WikiError
from raf.core.errors import ToolExecutionError
from raf.tools.scope.confined import ConfinedFolder, ConfinedPathError
from tests.tools.workspace_world import World, build_world, hostile_paths

Planter = Callable[[World, Path, str], None]


def _outside_md(world: World) -> Path:
    page = world.outside / "notes.md"
    if not page.exists():
        page.write_text(f"---\ntitle: Notes\n---\n{world.sentinel} outside page\n")
    return page


def _relative_file(world: World, where: Path) -> None:
    os.symlink(os.path.relpath(_outside_md(world), where.parent), where)


def _absolute_file(world: World, where: Path) -> None:
    os.symlink(_outside_md(world), where)


def _proc_root_file(world: World, where: Path) -> None:
    os.symlink(f"/proc/self/root{_outside_md(world)}", where)


def _climbing_file(world: World, where: Path) -> None:
    up = os.path.relpath(world.outside, where.parent)
    os.symlink(f"./{up}/../{world.outside.name}/notes.md", where)


def _hard_link(world: World, where: Path) -> None:
    os.link(_outside_md(world), where)


def _fifo(world: World, where: Path) -> None:
    os.mkfifo(where)


FILE_TRAPS: dict[str, Callable[[World, Path], None]] = {
    "relative-link": _relative_file,
    "absolute-link": _absolute_file,
    "proc-root-link": _proc_root_file,
    "climbing-link": _climbing_file,
    "hard-link": _hard_link,
    "fifo": _fifo,
}
"""Ways to make a store's page name lead to an outside file (or hang a reader)."""

DIR_TARGETS: dict[str, Callable[[World, Path], str]] = {
    "relative-folder-link": lambda w, p: os.path.relpath(w.outside, p.parent),
    "absolute-folder-link": lambda w, p: str(w.outside),
    "proc-root-folder-link": lambda w, p: f"/proc/self/root{w.outside}",
    "root-link": lambda w, p: "/",
    "dot-dot-folder-link": lambda w, p: f"{os.path.relpath(w.root, p.parent)}/../outside",
}
"""Ways to make a store's folder name lead outside."""


@pytest.fixture
def world(tmp_path: Path) -> World:
    built = build_world(tmp_path)
    _outside_md(built)
    return built


@contextlib.contextmanager
def unchanged(world: World) -> Iterator[None]:
    before = world.snapshot()
    yield
    assert world.snapshot() == before, "a store wrote outside its folder"


def _unblock(path: Path) -> None:
    """Release a reader stuck opening a FIFO (only reached when the check is broken)."""
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


# -- wiki ---------------------------------------------------------------------------------


@pytest.mark.parametrize("trap", sorted(FILE_TRAPS))
async def test_wiki_never_reads_a_trapped_page(world: World, trap: str) -> None:
    wiki = Wiki(world.root / "wiki")
    wiki.create("Fine", "inside page")
    where = world.root / "wiki" / "main" / "trap.md"
    FILE_TRAPS[trap](world, where)
    with unchanged(world):
        try:
            got = await asyncio.wait_for(asyncio.to_thread(_read_all, wiki, "main/trap"), 10)
        finally:
            _unblock(where)
        assert world.sentinel not in got
        assert "refused" in got or "not a wiki page" in got
        with pytest.raises(WikiError):
            await asyncio.wait_for(asyncio.to_thread(wiki.update, "main/trap", body="x"), 10)


def _read_all(wiki: Wiki, ref: str) -> str:
    """What a model can learn of `ref` through reading, listing and history."""
    try:
        page = wiki.read(ref)
    except WikiError as exc:
        text = str(exc)
    else:
        text = page.body
    return text + "".join(p.body for p in wiki.pages())


@pytest.mark.parametrize("trap", sorted(DIR_TARGETS))
def test_wiki_never_follows_a_linked_space(world: World, trap: str) -> None:
    base = world.root / "wiki"
    wiki = Wiki(base)
    where = base / "x"
    os.symlink(DIR_TARGETS[trap](world, where), where)
    with unchanged(world):
        with pytest.raises(WikiError, match="refused|no wiki page"):
            wiki.read("x/notes")
        with pytest.raises(WikiError, match="refused"):
            wiki.create("Planted", "written outside?", space="x")
        assert "x" not in wiki.spaces()
        assert all(world.sentinel not in p.body for p in wiki.pages())


def test_wiki_history_folder_link_is_refused(world: World) -> None:
    base = world.root / "wiki"
    wiki = Wiki(base)
    wiki.create("Page", "one")
    (base / ".history").mkdir()
    os.symlink(world.outside, base / ".history" / "main")
    with unchanged(world), pytest.raises(WikiError, match="refused"):
        wiki.update("main/page", body="two")


# -- knowledge ----------------------------------------------------------------------------


@pytest.mark.parametrize("trap", sorted(set(FILE_TRAPS) - {"fifo"} | set(DIR_TARGETS)))
def test_knowledge_never_indexes_what_a_link_points_at(world: World, trap: str) -> None:
    docs = world.root / "docs"
    docs.mkdir()
    (docs / "inside.md").write_text("# Inside\nplain inside words\n")
    if trap in FILE_TRAPS:
        FILE_TRAPS[trap](world, docs / "creds.md")
    else:
        os.symlink(DIR_TARGETS[trap](world, docs / "linked"), docs / "linked")
    index = KnowledgeIndex(world.root / "index.sqlite")
    with unchanged(world):
        index.sync([docs])
    hits = index.search(f"{world.sentinel} outside page", top_k=5)
    assert all(world.sentinel not in hit.text for hit in hits)
    assert index.search("plain inside words", top_k=1)


# -- memory -------------------------------------------------------------------------------


@pytest.mark.parametrize("trap", sorted(FILE_TRAPS))
async def test_memory_never_reads_a_trapped_page(world: World, trap: str) -> None:
    store = MemoryStore(world.root / "memory")
    store.seed()
    where = world.root / "memory" / "trap.md"
    FILE_TRAPS[trap](world, where)
    try:
        with pytest.raises((OutsideMemoryError, MemoryPageError)) as caught:
            await asyncio.wait_for(asyncio.to_thread(store.read, "trap.md"), 10)
    finally:
        _unblock(where)
    assert world.sentinel not in str(caught.value)


# -- skills -------------------------------------------------------------------------------


@pytest.mark.parametrize("trap", sorted(FILE_TRAPS))
async def test_skill_resource_swapped_for_a_trap_is_refused(world: World, trap: str) -> None:
    folder = world.root / "skills" / "notes"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: notes\ndescription: Notes.\n---\nBody.\n")
    (folder / "ref.md").write_text("fine")
    provider = AgentSkillsProvider(world.root / "skills")
    (folder / "ref.md").unlink()
    FILE_TRAPS[trap](world, folder / "ref.md")
    tool = {t.name: t for t in provider.tools()}["read_skill_resource"]
    from raf.core.tools import ToolContext

    try:
        call = tool.invoke({"skill_name": "notes", "path": "ref.md"}, ToolContext())
        try:
            result = await asyncio.wait_for(call, 10)
            text = f"{result.value} {result.error}"
            assert result.is_error
        except ToolExecutionError as exc:
            text = str(exc)
    finally:
        _unblock(folder / "ref.md")
    assert world.sentinel not in text


# -- the helper itself ---------------------------------------------------------------------


@pytest.mark.parametrize("trap", sorted(DIR_TARGETS))
def test_confined_folder_refuses_writes_through_linked_folders(world: World, trap: str) -> None:
    store = world.root / "store"
    store.mkdir()
    os.symlink(DIR_TARGETS[trap](world, store / "out"), store / "out")
    folder = ConfinedFolder(store, label="test store")
    with unchanged(world):
        with pytest.raises(ConfinedPathError, match="leads outside the test store"):
            folder.write_text("out/planted.md", "x")
        with pytest.raises(ConfinedPathError):
            folder.read_bytes("out/notes.md", max_bytes=100)
        assert folder.files() == []
        with pytest.raises(ConfinedPathError):
            folder.write_text("../outside/planted.md", "x")


# -- the workspace's hostile path corpus, as names given to each store ----------------------


def _corpus_size() -> int:
    fake = World(base=Path("/x"), root=Path("/x/ws"), outside=Path("/x/outside"), sentinel="")
    return len(hostile_paths(fake))


@pytest.mark.parametrize("index", range(_corpus_size()))
async def test_hostile_names_reach_nothing_outside_any_store(world: World, index: int) -> None:
    """Each hostile path of the workspace corpus, given as a name to the wiki, the memory
    store, a skill's resources and the confined folder itself, the stores being the
    workspace root (full of traps): nothing outside is shown or changed."""
    name = hostile_paths(world)[index]
    wiki = Wiki(world.root)
    memory = MemoryStore(world.root)
    folder = ConfinedFolder(world.root, label="test store")
    skills = world.root / "skills" / "notes"
    skills.mkdir(parents=True, exist_ok=True)
    (skills / "SKILL.md").write_text("---\nname: notes\ndescription: Notes.\n---\nBody.\n")
    (skills / "ref.md").write_text("fine")
    provider = AgentSkillsProvider(world.root / "skills")
    tool = {t.name: t for t in provider.tools()}["read_skill_resource"]
    from raf.core.tools import ToolContext

    shown: list[str] = []
    with unchanged(world):
        for attempt in (
            lambda: wiki.read(name).body,
            lambda: wiki.create("Fuzz", "x", space=name).body,
            lambda: memory.read(name),
            lambda: folder.read_text(name, max_bytes=1 << 20),
            lambda: str(folder.files(name)),
            lambda: folder.write_text(name + ".planted", "x"),
        ):
            try:
                shown.append(str(await asyncio.wait_for(asyncio.to_thread(attempt), 10)))
            except (WikiError, OutsideMemoryError, MemoryPageError, ConfinedPathError) as exc:
                shown.append(str(exc))
            except (OSError, ValueError, UnicodeError) as exc:
                shown.append(repr(exc))
        try:
            result = await asyncio.wait_for(
                tool.invoke({"skill_name": "notes", "path": name}, ToolContext()), 10
            )
            shown.append(f"{result.value} {result.error}")
        except ToolExecutionError as exc:  # the tool loop turns it into an error result
            shown.append(str(exc))
    assert all(world.sentinel not in text for text in shown), shown


# -- the file session store ----------------------------------------------------------------


@pytest.mark.parametrize("trap", sorted(FILE_TRAPS))
async def test_a_session_file_swapped_for_a_trap_is_refused(world: World, trap: str) -> None:
    from raf.core.errors import SessionError
    from raf.stores.sessions import JsonDirectorySessionStore

    folder = world.root / "sessions"
    folder.mkdir()
    where = folder / "abc.json"
    FILE_TRAPS[trap](world, where)
    store = JsonDirectorySessionStore(folder)
    try:
        with pytest.raises(SessionError) as caught:
            await asyncio.wait_for(store.load("abc"), 10)
    finally:
        _unblock(where)
    assert world.sentinel not in str(caught.value)


async def test_a_session_link_to_an_outside_session_is_not_loaded(world: World) -> None:
    from raf.core.errors import SessionError
    from raf.core.sessions import AgentSession
    from raf.stores.sessions import JsonDirectorySessionStore

    elsewhere = world.outside / "other.json"
    elsewhere.write_text(AgentSession(id="abc", metadata={"note": world.sentinel}).to_json())
    folder = world.root / "sessions"
    folder.mkdir()
    (folder / "abc.json").symlink_to(elsewhere)
    with pytest.raises(SessionError, match="never followed"):
        await JsonDirectorySessionStore(folder).load("abc")


@pytest.mark.parametrize("trap", sorted(DIR_TARGETS))
def test_memory_never_writes_through_a_linked_folder(world: World, trap: str) -> None:
    store = MemoryStore(world.root / "memory")
    store.seed()
    where = world.root / "memory" / "topics"
    os.symlink(DIR_TARGETS[trap](world, where), where)
    with unchanged(world):
        with pytest.raises(OutsideMemoryError):
            store.write("topics/planted.md", "x")
        with pytest.raises(OutsideMemoryError):
            store.update("topics/notes.md", lambda text: text + "changed")


def test_knowledge_refuses_a_folder_swapped_for_a_link_after_listing(world: World) -> None:
    """Between the confined listing and the read, `sub/` becomes a link to an outside
    folder holding a file of the same name: the read must not follow it."""
    from raf.context.knowledge.loaders import iter_files, load_file
    from raf.core.errors import ConfigurationError

    docs = world.root / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "sub" / "notes.md").write_text("# Inside\ninside words\n")
    listed = list(iter_files([docs]))
    assert [p.name for p in listed] == ["notes.md"]
    (docs / "sub" / "notes.md").unlink()
    (docs / "sub").rmdir()
    (docs / "sub").symlink_to(world.outside)
    with pytest.raises(ConfigurationError, match="cannot read knowledge source"):
        load_file(listed[0])


@pytest.mark.parametrize("name", ["loop1", "loop1/x", "a\x00b", "x" * 300, "link_out", "slash"])
async def test_store_tools_answer_odd_names_with_a_tool_error(world: World, name: str) -> None:
    """Names the path fuzz found crashing a store tool (a link loop, a NUL byte, a name too
    long) or listing outside pages: each is now a tool error the model reads."""
    from raf.context.memory.tools import reader_tools
    from raf.context.wiki.tools import wiki_tools
    from raf.core.tools import ToolContext

    memory = MemoryStore(world.root)
    tools = {t.name: t for t in [*reader_tools(memory), *wiki_tools(Wiki(world.root))]}
    calls = [
        ("read_memory", {"path": name}),
        ("wiki_create", {"title": "T", "body": "b", "space": name}),
        ("wiki_read", {"page": f"{name}/notes"}),
    ]
    with unchanged(world):
        for tool_name, args in calls:
            try:
                result = await asyncio.wait_for(tools[tool_name].invoke(args, ToolContext()), 10)
                text = f"{result.value} {result.error}"
                assert result.is_error, (tool_name, text)
            except ToolExecutionError as exc:
                text = str(exc)
            assert world.sentinel not in text
    assert all(world.sentinel not in p for p in memory.pages())
    assert "notes.md" not in " ".join(memory.files())  # the outside page is not listed


async def test_a_skill_scripts_copy_of_its_folder_takes_no_trap(world: World) -> None:
    """A script runs on a copy of its skill folder: links out, FIFOs and hard links in the
    folder are left out of the copy (a FIFO would have hung it)."""
    from raf.context.skills.runner import collect_skill_files

    folder = world.root / "skills" / "notes"
    (folder / "scripts").mkdir(parents=True)
    (folder / "scripts" / "run.py").write_text("print('hi')\n")
    (folder / "data.txt").write_text("inside\n")
    for trap, make in FILE_TRAPS.items():
        make(world, folder / f"{trap}.md")
    os.symlink(world.outside, folder / "linked")
    try:
        code, files = await asyncio.wait_for(
            asyncio.to_thread(collect_skill_files, folder / "scripts" / "run.py", folder), 10
        )
    finally:
        _unblock(folder / "fifo.md")
    assert code == "print('hi')\n"
    assert sorted(files) == ["data.txt", "scripts/run.py"]
    assert all(world.sentinel.encode() not in data for data in files.values())
