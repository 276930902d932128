"""A durable run that fails, or is cancelled, ends with a clear DurableRunError."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from raf import Agent, tool
from raf.core.errors import ModelError, RafError, SessionNotFoundError
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.durable import DurableRunError, DurableRuntime, sqlite_url
from raf.stores.sessions import SqliteSessionStore
from raf.testing import FunctionChatClient, call, reply


async def test_a_failing_model_and_a_cancelled_run_are_clear_errors(tmp_path: Path) -> None:
    entered = asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait for ever."""
        entered.set()
        await asyncio.Event().wait()
        return "never"

    def broken(messages: Sequence[ChatMessage], options: ChatOptions) -> str:
        raise ModelError("the model is down")

    def waiter(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage:
        return reply("", call("wait", call_id="w1"))

    runtime = DurableRuntime(
        [
            Agent(name="broken", chat_client=FunctionChatClient(broken)),
            Agent(name="waiter", chat_client=FunctionChatClient(waiter), tools=[wait]),
        ],
        store=SqliteSessionStore(tmp_path / "sessions.sqlite"),
        database=sqlite_url(tmp_path / "dbos.sqlite"),
    )
    await runtime.launch()
    try:
        with pytest.raises(DurableRunError, match="ModelError: the model is down") as failed:
            await runtime.run("broken", [ChatMessage.user("hi")], session_id="b1", max_wait=60)
        assert failed.value.error_type == "ModelError"
        with pytest.raises(SessionNotFoundError):
            await runtime.store.load("b1")  # a failed run stores nothing

        run_id = await runtime.start("waiter", [ChatMessage.user("hi")], session_id="w1")
        await asyncio.wait_for(entered.wait(), 60)
        await runtime.cancel(run_id)
        with pytest.raises(DurableRunError) as cancelled:
            await runtime.outcome(run_id, max_wait=60)
        assert cancelled.value.error_type == "CANCELLED"

        with pytest.raises(RafError, match="no agent named 'nobody'"):
            await runtime.start("nobody", [ChatMessage.user("hi")], session_id="n1")
    finally:
        runtime.shutdown()


def test_without_the_extra_the_error_names_the_install_line() -> None:
    code = (
        "import sys\n"
        "sys.modules['dbos'] = None\n"
        "try:\n"
        "    import raf.durable\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("MissingExtraError durable runs needs the 'durable' extra")
