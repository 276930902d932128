"""Sync tools run on raf's own bounded thread pool, not asyncio's default executor."""

from __future__ import annotations

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


async def test_a_sealed_batch_waits_briefly_then_hands_slow_calls_to_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`seal(wait=True)` settles calls that finish within the wait on the spot (no trip
    through the event loop); a call still running after it is settled by the loop later."""
    monkeypatch.setattr(tool_threads, "SEAL_WAIT_S", 5.0)
    quick = tool_threads.ThreadBatch()
    future = quick.submit(lambda: "quick")
    started = time.monotonic()
    assert quick.seal(wait=True) is None  # done within the wait: settled already
    assert time.monotonic() - started < 4  # it stopped waiting when the call ended
    assert future.done() and future.result() == "quick"

    monkeypatch.setattr(tool_threads, "SEAL_WAIT_S", 0.01)
    release = threading.Event()
    slow = tool_threads.ThreadBatch()
    blocked = slow.submit(lambda: release.wait(30) and "slow")
    sealed = slow.seal(wait=True)
    assert sealed is not None and not blocked.done()  # the wait is bounded
    release.set()
    await sealed
    assert blocked.result() == "slow"


async def test_a_batch_with_other_work_pending_does_not_hold_the_loop() -> None:
    release = threading.Event()
    batch = tool_threads.ThreadBatch()
    blocked = batch.submit(lambda: release.wait(30) and "done")
    sealed = batch.seal()  # the caller has other calls to drive: no wait at all
    assert sealed is not None and not blocked.done()
    release.set()
    await sealed
    assert blocked.result() == "done"
