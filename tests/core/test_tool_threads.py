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
