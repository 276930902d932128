"""The memory folder after kill -9: no temporary files left, every page in index.md, a
folder that validates, and queued consolidations replayed rather than lost."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

from raf.agent.builder import AgentBuilder
from raf.context.memory import SuperBrainContextProvider, validate_memory
from raf.context.memory.journal import JobJournal
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.testing import FunctionChatClient, ScriptedChatClient, call, reply

ROOT = Path(__file__).resolve().parents[3]

BUSY_CURATOR = textwrap.dedent(
    """
    import asyncio, sys
    from raf.agent.builder import AgentBuilder
    from raf.context.memory import SuperBrainContextProvider
    from raf.testing import FunctionChatClient, ScriptedChatClient, call, reply

    directory, tag = sys.argv[1], sys.argv[2]
    count = [0]

    def curator(messages, options):
        count[0] += 1
        body = "---\\ntitle: p\\ntype: topic\\n---\\n" + ("words " * 200_000)
        path = f"assets/{tag}-{count[0]}.md"
        return reply("", call("write_file", path=path, content=body))

    async def main() -> None:
        memory = SuperBrainContextProvider(
            directory,
            consolidation_interval=1,
            memory_client=FunctionChatClient(curator),
            curator_max_tool_rounds=10_000,
        )
        agent = (
            AgentBuilder().with_chat_client(ScriptedChatClient(["ok"]))
            .with_context_provider(memory).build()
        )
        await agent.run(f"Remember that {tag} likes tea.", session=agent.create_session())
        print("queued", flush=True)
        await memory.drain(600)

    asyncio.run(main())
    """
)


def _spawn(script: str, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def _noting_curator(seen: list[str]) -> FunctionChatClient:
    """A curator that appends each consolidated transcript's first line to USER.md."""

    def answer(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage | str:
        last = messages[-1]
        if last.role is Role.USER:
            seen.append(last.text)
            return reply("", call("read_file", path="USER.md"))
        result = last.function_results[0]
        if result.name == "read_file":
            facts = [line for line in seen[-1].splitlines() if "likes" in line]
            text = str(result.result).rstrip("\n") + "\n" + "\n".join(facts) + "\n"
            return reply("", call("write_file", path="USER.md", content=text))
        return "done"

    return FunctionChatClient(answer)


async def _open_and_drain(directory: Path, seen: list[str]) -> SuperBrainContextProvider:
    memory = SuperBrainContextProvider(
        directory, consolidation_interval=1, memory_client=_noting_curator(seen)
    )
    agent = (
        AgentBuilder()
        .with_chat_client(ScriptedChatClient(["ok"]))
        .with_context_provider(memory)
        .build()
    )
    await agent.run("hello", session=agent.create_session())  # small talk: nothing new
    assert await memory.drain(60)
    await memory.aclose()
    return memory


def test_kill_9_during_curator_writes_leaves_a_folder_that_validates(tmp_path: Path) -> None:
    directory = tmp_path / "memory"
    rng = random.Random(7)
    damage = 0  # problems seen right after a kill, before the next start repairs them
    for round_ in range(24):  # until kills have landed mid-write (at least 8 rounds)
        if round_ >= 8 and damage:
            break
        proc = _spawn(BUSY_CURATOR, str(directory), f"r{round_}")
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"queued", proc.stderr
        time.sleep(rng.uniform(0.2, 0.8))
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        if not damage:  # once a kill has landed mid-write, the count is not needed
            damage += len(validate_memory(directory))
    assert damage, "no kill landed mid-write; the test proves nothing"

    seen: list[str] = []
    asyncio.run(_open_and_drain(directory, seen))
    assert validate_memory(directory) == []
    assert not list(directory.rglob("*.tmp"))
    index = (directory / "index.md").read_text(encoding="utf-8")
    written = sorted(p.name for p in (directory / "assets").glob("*.md"))
    assert written and all(f"({'assets/' + name})" in index for name in written)
    # every killed process's job was replayed once by the next start
    assert not list((directory / ".queue").glob("*.json"))


HANGING_CURATOR = textwrap.dedent(
    """
    import asyncio, sys
    from raf.agent.builder import AgentBuilder
    from raf.context.memory import SuperBrainContextProvider
    from raf.testing import FunctionChatClient, ScriptedChatClient

    async def never(messages, options):
        await asyncio.sleep(3600)
        return "never"

    async def main() -> None:
        memory = SuperBrainContextProvider(
            sys.argv[1], consolidation_interval=1, memory_client=FunctionChatClient(never)
        )
        agent = (
            AgentBuilder().with_chat_client(ScriptedChatClient(["noted"]))
            .with_context_provider(memory).build()
        )
        await agent.run("Remember that Ada likes tea.", session=agent.create_session())
        print("queued", flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
    """
)


def test_a_queued_consolidation_survives_kill_9_and_runs_at_the_next_start(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "memory"
    proc = _spawn(HANGING_CURATOR, str(directory))
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"queued"
    seen: list[str] = []
    asyncio.run(_open_and_drain(directory, seen))  # the owner is alive: not replayed
    assert not any("Ada likes tea" in text for text in seen)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)

    asyncio.run(_open_and_drain(directory, seen))
    assert sum("Ada likes tea" in text for text in seen) == 1
    user = (directory / "USER.md").read_text(encoding="utf-8")
    assert "Ada likes tea" in user
    assert not list((directory / ".queue").glob("*.json"))
    assert validate_memory(directory) == []


def test_a_job_is_claimed_only_when_its_owner_let_go(tmp_path: Path) -> None:
    journal = JobJournal(tmp_path)
    receipt = journal.record("s", [{"role": "user", "text": "x"}])
    assert journal.claim_orphans() == []  # held by its owner
    journal.release(receipt)
    (orphan,) = journal.claim_orphans()
    assert (orphan.session_id, orphan.turns) == ("s", [{"role": "user", "text": "x"}])
    assert journal.claim_orphans() == []  # now held by this claimer
    journal.done(orphan.receipt)
    assert not list((tmp_path / ".queue").iterdir())
    (tmp_path / ".queue" / "0-broken.json").write_text('{"session_id": ')
    assert journal.claim_orphans() == []
    assert not (tmp_path / ".queue" / "0-broken.json").exists()
