"""Sync tools run on raf's own bounded thread pool, not asyncio's default executor."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from raf import AgentBuilder, ConfigurationError, tool
from raf.core import tool_threads
from raf.testing import ScriptedChatClient, call, reply

_lock = threading.Lock()
_running = 0
PEAK: list[int] = []
NAMES: list[str] = []


@tool
def busy(n: int) -> int:
    """Blocks for a moment, counting how many run at once."""
    global _running
    with _lock:
        _running += 1
        PEAK.append(_running)
        NAMES.append(threading.current_thread().name)
    time.sleep(0.15)
    with _lock:
        _running -= 1
    return n


@pytest.fixture
def two_threads() -> Iterator[None]:
    tool_threads.set_tool_threads(2)
    yield
    tool_threads.set_tool_threads(None)


async def test_sync_tools_share_a_bounded_pool_of_rafs_own(two_threads: None) -> None:
    PEAK.clear()
    NAMES.clear()
    calls = [call("busy", n=i, call_id=f"c{i}") for i in range(5)]
    model = ScriptedChatClient([reply("", *calls), "done"])
    agent = AgentBuilder().with_chat_client(model).with_tool(busy).build()
    assert (await agent.run("go")).text == "done"
    assert max(PEAK) == 2 and len(PEAK) == 5
    assert all(name.startswith("raf-tool") for name in NAMES)
    results = model.requests[1].messages[-1].function_results
    assert [r.result for r in results] == [0, 1, 2, 3, 4]


def test_the_pool_size_must_be_positive(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError, match="set_tool_threads"):
        tool_threads.set_tool_threads(0)
    monkeypatch.setattr(tool_threads, "_size", None)
    monkeypatch.setenv("RAF_TOOL_THREADS", "-2")
    with pytest.raises(ConfigurationError, match="RAF_TOOL_THREADS"):
        tool_threads.tool_threads()
    monkeypatch.setenv("RAF_TOOL_THREADS", "3")
    assert tool_threads.tool_threads() == 3


async def test_a_run_with_sync_tools_never_holds_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While a batch of sync calls runs on the pool, the event loop runs other work: a
    sync tool that waits for a callback of the loop gets it (a loop's thread held until
    the calls end, as a wait in `seal` would, never runs it)."""
    monkeypatch.setattr(tool_threads, "SEAL_WAIT_S", 20.0, raising=False)  # a long hold
    loop = asyncio.get_running_loop()

    def ask_the_loop() -> str:
        answered = threading.Event()
        loop.call_soon_threadsafe(answered.set)
        return "the loop answered" if answered.wait(10) else "the loop was held"

    model = ScriptedChatClient([reply("", call("ask_the_loop", call_id="c1")), "done"])
    agent = AgentBuilder().with_chat_client(model).with_tool(tool(ask_the_loop)).build()
    assert (await agent.run("go")).text == "done"
    results = model.requests[1].messages[-1].function_results
    assert [r.result for r in results] == ["the loop answered"]


async def test_a_batch_with_other_work_pending_does_not_hold_the_loop() -> None:
    release = threading.Event()
    batch = tool_threads.ThreadBatch()
    blocked = batch.submit(lambda: release.wait(30) and "done")
    sealed = batch.seal()  # the caller has other calls to drive: no wait at all
    assert sealed is not None and not blocked.done()
    release.set()
    await sealed
    assert blocked.result() == "done"
