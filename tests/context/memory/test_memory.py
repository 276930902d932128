"""Super-brain memory: layout, read path, curator write path, worker, processes, CLI."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from raf.agent.agent import Agent
from raf.agent.builder import AgentBuilder
from raf.cli.main import main as raf_main
from raf.context.memory import MemoryStore, SuperBrainContextProvider, validate_memory
from raf.context.memory.layout import TEMPLATES
from raf.context.memory.store import today
from raf.core.errors import ToolExecutionError
from raf.core.messages import ChatMessage, Role
from raf.core.options import AgentRunOptions, ChatOptions
from raf.core.sessions import AgentSession
from raf.core.tools import ToolContext
from raf.testing import FunctionChatClient, ScriptedChatClient, call, reply

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]

USER_PAGE = """---
title: User
type: reference
---
# User

- Name: Ada
- Lives in Lyon
"""


def agent_with(
    memory: SuperBrainContextProvider, replies: int = 20
) -> tuple[Agent, ScriptedChatClient]:
    model = ScriptedChatClient(["ok"] * replies)
    agent = AgentBuilder().with_chat_client(model).with_context_provider(memory).build()
    return agent, model


def gated_curator(started: asyncio.Event, gate: asyncio.Event, prompts: list[str]):
    """A curator that records its prompt and waits for `gate` before answering."""

    async def answer(messages: Sequence[ChatMessage], options: ChatOptions) -> str:
        prompts.append(messages[-1].text)
        started.set()
        await gate.wait()
        return "nothing to keep"

    return FunctionChatClient(answer)


async def test_layout_is_seeded_on_first_use_and_valid(tmp_path: Path) -> None:
    folder = tmp_path / "brain"
    memory = SuperBrainContextProvider(folder)
    assert not folder.exists()
    result = await memory.on_invoking(None, AgentSession(), [], AgentRunOptions())
    for relative in TEMPLATES:
        assert (folder / relative).is_file(), relative
    assert (folder / "assets").is_dir()
    assert validate_memory(folder) == []
    assert "persistent memory" in (result.instructions or "")
    assert [t.name for t in result.tools] == ["read_memory", "list_memory"]
    assert memory.kind == "memory" and memory.name == "super-brain"
    (folder / "USER.md").write_text(USER_PAGE)
    await SuperBrainContextProvider(folder).ensure_seeded()  # never overwrites
    assert (folder / "USER.md").read_text() == USER_PAGE


async def test_the_agent_reads_the_memory_on_demand(tmp_path: Path) -> None:
    memory = SuperBrainContextProvider(tmp_path, consolidation_interval=0)
    await memory.ensure_seeded()
    (tmp_path / "USER.md").write_text(USER_PAGE)
    model = ScriptedChatClient(
        [reply("", call("read_memory", path="USER.md", call_id="m1")), "You are Ada."]
    )
    agent = AgentBuilder().with_chat_client(model).with_context_provider(memory).build()
    response = await agent.run("Who am I?")
    assert response.text == "You are Ada."
    assert "Ada" not in model.requests[0].system  # only the notice, not the content
    result = model.requests[1].messages[-1].function_results[0]
    assert "- Name: Ada" in result.as_text()
    tools = {
        t.name: t
        for t in (await memory.on_invoking(None, AgentSession(), [], AgentRunOptions())).tools
    }
    with pytest.raises(
        ToolExecutionError, match=r"^'\.\./secret' leads outside the memory folder$"
    ):
        await tools["read_memory"].invoke({"path": "../secret"}, ToolContext())
    listing = await tools["list_memory"].invoke({}, ToolContext())
    assert "USER.md" in listing.value


async def test_a_stated_fact_lands_in_the_user_file_after_the_interval(tmp_path: Path) -> None:
    curator = ScriptedChatClient(
        [
            reply("", call("read_file", path="USER.md")),
            reply("", call("write_file", path="USER.md", content=USER_PAGE)),
            "Saved the user's name and city.",
        ]
    )
    memory = SuperBrainContextProvider(tmp_path, memory_client=curator)
    agent, _ = agent_with(memory)
    session = agent.create_session()
    await agent.run("Hi! I'm Ada and I live in Lyon.", session=session)
    await agent.run("Can you suggest a book?", session=session)
    await memory.drain(10)
    assert curator.requests == []  # two turns: below the interval of 3
    assert session.get_provider_state("super-brain")["turns"] == 2
    await agent.run("Something short, please.", session=session)
    await memory.drain(10)
    assert len(curator.requests) == 3
    prompt = curator.requests[0].messages[-1].text
    assert "I'm Ada and I live in Lyon" in prompt and "Something short" in prompt
    assert "Curator rules" in curator.requests[0].system
    assert [t for t in curator.requests[0].tool_names] == [
        "list_files",
        "read_file",
        "write_file",
        "edit_file",
        "supersede_fact",
    ]
    user = (tmp_path / "USER.md").read_text()
    assert "- Name: Ada" in user and "- Lives in Lyon" in user
    log = (tmp_path / "log.md").read_text()
    assert "changed: USER.md" in log
    assert session.get_provider_state("super-brain") == {"turns": 3, "pending": []}
    assert validate_memory(tmp_path) == []
    await memory.aclose()


async def test_a_contradicted_fact_is_struck_through_with_a_date(tmp_path: Path) -> None:
    memory = SuperBrainContextProvider(tmp_path, consolidation_interval=1)
    await memory.ensure_seeded()
    (tmp_path / "USER.md").write_text(USER_PAGE)
    curator = ScriptedChatClient(
        [
            reply(
                "",
                call(
                    "supersede_fact",
                    path="USER.md",
                    old_text="Lives in Lyon",
                    new_text="Lives in Paris",
                ),
            ),
            "Updated the city.",
        ]
    )
    memory.memory_client = curator
    agent, _ = agent_with(memory)
    await agent.run("I moved to Paris last month.")
    await memory.aclose()
    user = (tmp_path / "USER.md").read_text()
    assert f"- ~~Lives in Lyon~~ (superseded {today()})\n- Lives in Paris\n" in user
    assert "- Name: Ada" in user


async def test_curator_tools_stay_in_the_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    folder = tmp_path / "brain"
    curator = ScriptedChatClient(
        [
            reply(
                "",
                call("write_file", path="../outside.md", content="x"),
                call("write_file", path="assets/run.sh", content="rm -rf /"),
                call("edit_file", path="USER.md", old_text="nope", new_text="x"),
                call("write_file", path="assets/espresso.md", content="# Espresso\n\n- 9 bar\n"),
            ),
            "done",
        ]
    )
    memory = SuperBrainContextProvider(folder, consolidation_interval=1, memory_client=curator)
    agent, _ = agent_with(memory)
    await agent.run("Espresso wants 9 bar of pressure, remember that for my café.")
    await memory.aclose()
    results = [r for r in curator.requests[1].messages[-1].function_results]
    assert "outside the memory folder" in (results[0].error or "")
    assert "only Markdown pages" in (results[1].error or "")
    assert "occurs 0 times" in (results[2].error or "")
    assert results[3].result == "created assets/espresso.md"
    assert not outside.exists() and not (folder / "assets" / "run.sh").exists()
    page = (folder / "assets" / "espresso.md").read_text()
    assert page.startswith("---\ntitle: Espresso\ntype: topic\n")  # front matter added
    assert "](assets/espresso.md)" in (folder / "index.md").read_text()  # indexed
    assert validate_memory(folder) == []


async def test_small_talk_is_skipped_without_calling_the_curator(tmp_path: Path) -> None:
    curator = ScriptedChatClient([])
    memory = SuperBrainContextProvider(tmp_path, consolidation_interval=2, memory_client=curator)
    agent, _ = agent_with(memory)
    session = agent.create_session()
    await agent.run("Hello!", session=session)
    await agent.run("thanks", session=session)
    await memory.aclose()
    assert curator.requests == []
    assert "skipped: small talk" in (tmp_path / "log.md").read_text()


async def test_interval_zero_disables_consolidation(tmp_path: Path) -> None:
    curator = ScriptedChatClient([])
    memory = SuperBrainContextProvider(tmp_path, consolidation_interval=0, memory_client=curator)
    agent, _ = agent_with(memory)
    session = agent.create_session()
    for i in range(4):
        await agent.run(f"My favourite number is {i}.", session=session)
    await memory.aclose()
    assert curator.requests == [] and memory.worker.completed == 0
    assert session.get_provider_state("super-brain") is None


async def test_interval_and_latest_wins_coalescing(tmp_path: Path) -> None:
    started, gate = asyncio.Event(), asyncio.Event()
    prompts: list[str] = []
    memory = SuperBrainContextProvider(
        tmp_path, consolidation_interval=2, memory_client=gated_curator(started, gate, prompts)
    )
    agent, _ = agent_with(memory)
    session = agent.create_session()
    for i in range(1, 9):
        await agent.run(f"Fact number {i} about my garden.", session=session)
        if i == 2:
            await asyncio.wait_for(started.wait(), 5)
    # jobs after turns 2, 4, 6 and 8: the first runs, the next three coalesce into one
    assert memory.worker.pending == 1 and memory.worker.coalesced == 2
    gate.set()
    await memory.aclose()
    assert len(prompts) == 2
    assert "Fact number 1 " in prompts[0] and "Fact number 2 " in prompts[0]
    assert "Fact number 3 " not in prompts[0]
    for i in range(3, 9):
        assert f"Fact number {i} " in prompts[1]
    assert memory.worker.completed == 2


async def test_the_run_never_waits_for_consolidation(tmp_path: Path) -> None:
    started, gate = asyncio.Event(), asyncio.Event()
    prompts: list[str] = []
    memory = SuperBrainContextProvider(
        tmp_path, consolidation_interval=1, memory_client=gated_curator(started, gate, prompts)
    )
    agent, _ = agent_with(memory)
    response = await asyncio.wait_for(agent.run("I am allergic to peanuts."), 5)
    assert response.text == "ok"
    await asyncio.wait_for(started.wait(), 5)
    # the run has returned while the curator is still working
    assert memory.worker.running is not None and not gate.is_set()
    second = await asyncio.wait_for(agent.run("And I love cashews."), 5)
    assert second.text == "ok"
    gate.set()
    await memory.aclose()
    assert memory.worker.completed == 2


async def test_aclose_without_drain_cancels_the_worker(tmp_path: Path) -> None:
    started, gate = asyncio.Event(), asyncio.Event()
    prompts: list[str] = []
    memory = SuperBrainContextProvider(
        tmp_path, consolidation_interval=1, memory_client=gated_curator(started, gate, prompts)
    )
    agent, _ = agent_with(memory)
    await agent.run("My dog is called Rex.")
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.wait_for(memory.aclose(drain=False), 5)
    assert memory.worker.completed == 0 and memory.worker.running is None
    assert "changed:" not in (tmp_path / "log.md").read_text()
    await agent.run("My cat is called Tom.")  # a closed worker takes no new job
    assert memory.worker.pending == 0
    assert not list(tmp_path.rglob("*.tmp"))


async def test_drain_with_a_timeout_then_cancel(tmp_path: Path) -> None:
    started, gate = asyncio.Event(), asyncio.Event()
    prompts: list[str] = []
    memory = SuperBrainContextProvider(
        tmp_path, consolidation_interval=1, memory_client=gated_curator(started, gate, prompts)
    )
    agent, _ = agent_with(memory)
    await agent.run("I work at a bakery.")
    begin = time.monotonic()
    await memory.aclose(timeout_s=0.3)
    assert time.monotonic() - begin < 5 and memory.worker.completed == 0


def test_concurrent_processes_share_one_memory_folder(tmp_path: Path) -> None:
    folder = tmp_path / "shared-brain"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    jobs = 4
    processes = [
        subprocess.Popen(
            [sys.executable, str(HERE / "memory_process.py"), str(folder), tag, str(jobs)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for tag in ("a", "b", "c")
    ]
    try:
        for process in processes:
            _, err = process.communicate(timeout=120)
            assert process.returncode == 0, err.decode()
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait(5)
    assert validate_memory(folder) == []
    user = (folder / "USER.md").read_text()
    for tag in ("a", "b", "c"):
        for n in range(1, jobs + 1):
            assert f"- fact {tag}-{n}\n" in user, f"fact {tag}-{n} was lost"
    log = (folder / "log.md").read_text()
    assert log.count("changed: USER.md") == 3 * jobs
    assert user.startswith("---\n") and user.count("---\n") == 2


def test_validate_reports_problems(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.seed()
    assert validate_memory(tmp_path) == []
    (tmp_path / "assets" / "orphan.md").write_text(
        "---\ntitle: x\n---\nsee [missing](nowhere.md)\n"
    )
    (tmp_path / "assets" / "rules.md").write_text("no front matter\n")
    (tmp_path / "LESSON.md").write_text("---\ntitle: [bad\n---\n")
    (tmp_path / "AGENT.md").unlink()
    (tmp_path / ".USER.md.abc.tmp").write_text("half")
    problems = validate_memory(tmp_path)
    text = "\n".join(problems)
    assert "AGENT.md: missing" in text
    assert "index.md: link 'AGENT.md' does not resolve" in text
    assert "index.md: does not list assets/orphan.md" in text
    assert "assets/orphan.md: link 'nowhere.md' does not resolve" in text
    assert "assets/rules.md: no YAML front matter" in text
    assert "LESSON.md: the front matter is not valid YAML" in text
    assert ".USER.md.abc.tmp: unfinished write left behind" in text
    assert validate_memory(tmp_path / "nothing") == [f"{tmp_path / 'nothing'}: not a directory"]


def test_cli_validate_and_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    MemoryStore(tmp_path).seed()
    (tmp_path / "USER.md").write_text(USER_PAGE)
    assert raf_main(["memory", "validate", str(tmp_path)]) == 0
    assert "valid (9 pages)" in capsys.readouterr().out
    assert raf_main(["memory", "show", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "===== USER.md =====" in out and "- Lives in Lyon" in out
    assert raf_main(["memory", "show", str(tmp_path), "--page", "USER.md"]) == 0
    assert capsys.readouterr().out == USER_PAGE
    (tmp_path / "index.md").unlink()
    assert raf_main(["memory", "validate", str(tmp_path)]) == 1
    assert "index.md: missing" in capsys.readouterr().out


async def test_user_messages_only_from_text(tmp_path: Path) -> None:
    memory = SuperBrainContextProvider(tmp_path, consolidation_interval=5)
    session = AgentSession()
    from raf.core.responses import AgentResponse

    tool_turn = [ChatMessage(role=Role.TOOL, contents=[]), ChatMessage.assistant("Noted.")]
    await memory.on_invoked(
        None, session, [ChatMessage.user("I like tea")], AgentResponse(messages=tool_turn), None
    )
    assert session.get_provider_state("super-brain")["pending"] == [
        {"role": "user", "text": "I like tea"},
        {"role": "assistant", "text": "Noted."},
    ]
    await memory.on_invoked(None, session, [ChatMessage.user("x")], None, RuntimeError("boom"))
    assert session.get_provider_state("super-brain")["turns"] == 1


async def test_closing_the_agent_drains_the_memory_worker(tmp_path: Path) -> None:
    curator = ScriptedChatClient(
        [reply("", call("write_file", path="USER.md", content=USER_PAGE)), "ok"]
    )
    memory = SuperBrainContextProvider(tmp_path, consolidation_interval=1, memory_client=curator)
    agent, _ = agent_with(memory)
    async with agent:
        await agent.run("I'm Ada, from Lyon.")
    assert memory.worker.completed == 1 and memory.worker.idle
    assert "- Name: Ada" in (tmp_path / "USER.md").read_text()


def test_run_sync_loses_no_consolidation(tmp_path: Path) -> None:
    """Each run_sync has its own event loop, which cancels the worker when it ends: the
    job goes back to the queue and `aclose` on a later loop runs it."""
    curator = ScriptedChatClient(
        [reply("", call("write_file", path="USER.md", content=USER_PAGE)), "ok"]
    )
    memory = SuperBrainContextProvider(tmp_path, consolidation_interval=1, memory_client=curator)
    agent, _ = agent_with(memory)
    session = agent.create_session()
    agent.run_sync("I'm Ada.", session=session)
    agent.run_sync("I live in Lyon.", session=session)
    assert memory.worker.pending == 1 and memory.worker.completed == 0
    asyncio.run(agent.aclose())
    assert memory.worker.completed == 1 and memory.worker.idle
    assert "- Lives in Lyon" in (tmp_path / "USER.md").read_text()
    assert "4 message(s) · changed: USER.md" in (tmp_path / "log.md").read_text()


def test_cli_show_reports_bad_pages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    MemoryStore(tmp_path).seed()
    assert raf_main(["memory", "show", str(tmp_path), "--page", "nope.md"]) == 1
    assert "memory page 'nope.md' does not exist" in capsys.readouterr().err
    assert raf_main(["memory", "show", str(tmp_path), "--page", "../x.md"]) == 1
    assert "leads outside the memory folder" in capsys.readouterr().err
    assert raf_main(["memory", "show", str(tmp_path), "--page", "assets"]) == 1
    assert "is a folder, not a page" in capsys.readouterr().err
    (tmp_path / "assets" / "latin1.md").write_bytes(b"---\ntitle: x\n---\ncaf\xe9\n")
    assert raf_main(["memory", "show", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "===== assets/latin1.md =====\n(cannot be shown:" in out
    assert "===== USER.md =====" in out


async def test_bad_configuration_is_a_clear_error(tmp_path: Path) -> None:
    from raf.core.errors import ConfigurationError

    afile = tmp_path / "memory.md"
    afile.write_text("not a folder")
    with pytest.raises(ConfigurationError, match="is a file, not a folder"):
        SuperBrainContextProvider(afile)
    with pytest.raises(ConfigurationError, match="0 or more"):
        SuperBrainContextProvider(tmp_path, consolidation_interval=-1)
    with pytest.raises(ConfigurationError, match="whole number"):
        SuperBrainContextProvider(tmp_path, consolidation_interval="3")  # type: ignore[arg-type]
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "assets").write_text("a file where the assets folder goes")
    memory = SuperBrainContextProvider(blocked)
    with pytest.raises(ConfigurationError, match="cannot be set up"):
        await memory.on_invoking(None, AgentSession(), [], AgentRunOptions())


def test_spec_spellings_are_accepted(tmp_path: Path) -> None:
    curator = ScriptedChatClient(["ok"])
    memory = SuperBrainContextProvider(tmp_path, consolidationInterval=0, memoryModel=curator)
    assert memory.consolidation_interval == 0 and memory.memory_client is curator


def test_cli_init_seeds_a_folder_that_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "brain"
    assert raf_main(["memory", "init", str(folder)]) == 0
    assert "created index.md" in capsys.readouterr().out
    assert raf_main(["memory", "validate", str(folder)]) == 0
    assert "valid (9 pages)" in capsys.readouterr().out
    (folder / "USER.md").write_text(USER_PAGE)
    assert raf_main(["memory", "init", str(folder)]) == 0  # never overwrites
    assert capsys.readouterr().out.strip().endswith(": ok")
    assert (folder / "USER.md").read_text() == USER_PAGE
    (tmp_path / "file").write_text("x")
    assert raf_main(["memory", "init", str(tmp_path / "file")]) == 1
    assert "a file, not a folder" in capsys.readouterr().err
