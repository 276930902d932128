"""raf's sync-tool pool and ids across fork and exit, in real processes: a child forked after a
sync tool ran gets its own pool (the parent's threads do not exist there), and a sync tool
still stuck after its timeout does not hold up the process's exit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def run_program(source: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "RAF_TOOL_THREADS": "2"},
    )


def test_a_child_forked_after_a_sync_tool_runs_sync_tools() -> None:
    done = run_program(
        """
        import asyncio, os, sys, time
        from raf.core.messages import new_id
        from raf.core.tool_threads import run_in_tool_thread

        def square(x):
            return x * x

        async def call(x):
            return await asyncio.wait_for(run_in_tool_thread(square, x), 10)

        assert asyncio.run(call(3)) == 9  # the pool's threads now exist in the parent
        time.sleep(0.3)  # the worker goes idle, waiting for the next call
        parent_id = new_id("x")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:  # a copied pool would queue the call for a thread that is not there
                answer = f"{asyncio.run(call(4))} {new_id('x')}"
            except BaseException as exc:
                answer = f"failed: {type(exc).__name__}"
            os.write(w, answer.encode())
            os._exit(0)
        os.close(w)
        _, status = os.waitpid(pid, 0)
        child, child_id = os.read(r, 1000).decode().split(" ", 1)
        prefix = parent_id.split("_")[1][:10]
        print(child, child_id != new_id("x"), prefix != child_id.split("_")[1][:10])
        """,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    # the child's call came back; its ids do not repeat the parent's
    assert done.stdout.split() == ["16", "True", "True"]


def test_a_hung_sync_tool_does_not_hold_up_exit_after_its_timeout() -> None:
    done = run_program(
        """
        import asyncio, time
        from raf.core.tool_threads import run_in_tool_thread

        async def main():
            try:
                await asyncio.wait_for(run_in_tool_thread(time.sleep, 60), 0.5)
            except TimeoutError:
                print("timed out")

        asyncio.run(main())
        """,
        timeout=20,  # the stuck call sleeps 60 s: joining its thread at exit would time out
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "timed out"


def test_a_forked_child_draws_session_ids_of_its_own() -> None:
    done = run_program(
        """
        import os
        from raf.core.sessions import new_session_id

        new_session_id()  # the parent now holds random bytes for its next ids
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.write(w, " ".join(new_session_id() for _ in range(3)).encode())
            os._exit(0)
        os.close(w)
        os.waitpid(pid, 0)
        child = set(os.read(r, 1000).decode().split())
        parent = {new_session_id() for _ in range(3)}
        print(len(child), len(child & parent))
        """,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "0"]
