"""A durable agent run in its own process, for the crash tests (run as a script).

`python app.py start|recover|worker DB_URL FOLDER [RUN_ID…]`: the agent's scripted model
calls the tool `append` four times, one call after another; each call appends a line to
FOLDER/out.txt. FOLDER/pause-at holding N makes the first call N stop (forever) before it appends,
after writing FOLDER/reached-N with its process id; every later call in that process stops
before appending too. The test kills the process there. A step killed half-way runs again
(steps are at least once), so the stops keep the kill between steps.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from raf import Agent, ToolContext, tool
from raf.agent.history import InMemoryHistoryProvider
from raf.core.contents import FunctionResultContent
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.sessions import SessionStore
from raf.durable import DurableRuntime
from raf.stores.postgres_sessions import PostgresSessionStore
from raf.stores.sessions import SqliteSessionStore
from raf.testing import FunctionChatClient, call, reply
from raf.workflow import SqliteCheckpointStore, Workflow, WorkflowBuilder
from raf.workflow.executor import FunctionExecutor

CALLS = 4


def _append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(line + "\n")
        out.flush()
        os.fsync(out.fileno())


def write_line(folder: Path, line: str) -> None:
    """The side effect the tests count, with the stop point described above."""
    time.sleep(float(os.environ.get("RAF_TEST_TOOL_SECONDS", "0")))
    number = line.rsplit(" ", 1)[-1]
    pause = folder / "pause-at"
    if pause.exists():
        at = pause.read_text().strip()
        reached = folder / f"reached-{at}"
        if at == number and not reached.exists():
            reached.write_text(str(os.getpid()))
            time.sleep(3600)  # the test kills the process here
        if reached.exists() and reached.read_text() == str(os.getpid()):
            # this process is about to be killed: every other call stops before its
            # side effect too, so the kill lands between steps, never inside one
            time.sleep(3600)
    _append(folder / "out.txt", line)


def build_workflow(folder: Path) -> Workflow:
    """Four nodes in a chain, each writing one line: one superstep each."""

    def node(k: int) -> FunctionExecutor:
        def write(text: str) -> str:
            write_line(folder, f"{text} {k}")
            return text

        return FunctionExecutor(write, id=f"step{k}")

    nodes = [node(k) for k in range(1, CALLS + 1)]
    builder = WorkflowBuilder("writer", start=nodes[0])
    for a, b in itertools.pairwise(nodes):
        builder.add_edge(a, b)
    return builder.with_checkpoint_store(
        SqliteCheckpointStore(folder / "checkpoints.sqlite")
    ).build()


def build_agent(folder: Path, name: str = "writer") -> Agent:
    """The agent: `append` tool plus a model that asks for it CALLS times, then answers."""

    @tool
    def append(line: str, context: ToolContext) -> str:
        """Append a line to the output file."""
        _append(folder / "keys.txt", f"{line} {context.idempotency_key}")
        write_line(folder, line)
        return f"wrote {line}"

    def model(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage | str:
        done = sum(1 for m in messages for c in m.contents if isinstance(c, FunctionResultContent))
        _append(folder / "model-calls.txt", f"{os.getpid()} {done}")
        first = messages[0].text if messages else ""
        if done < CALLS:
            return reply("", call("append", line=f"{first} {done + 1}", call_id=f"c{done + 1}"))
        return f"all done: {first}"

    return Agent(
        name=name,
        chat_client=FunctionChatClient(model),
        tools=[append],
        context_providers=[InMemoryHistoryProvider()],  # the session keeps the conversation
    )


def build_store(database: str, folder: Path) -> SessionStore:
    if database.startswith("postgresql://"):
        return PostgresSessionStore(database)
    return SqliteSessionStore(folder / "sessions.sqlite")


async def main(argv: list[str]) -> int:
    mode, database, folder_name, *run_ids = argv
    folder = Path(folder_name)
    runtime = DurableRuntime(
        [build_agent(folder)],
        store=build_store(database, folder),
        database=database,
        executor_id=os.environ.get("RAF_TEST_EXECUTOR"),
        concurrency=int(os.environ.get("RAF_TEST_CONCURRENCY", "0")) or None,
        takeover_after=float(os.environ.get("RAF_TEST_TAKEOVER", "10")),
        heartbeat_interval=0.5,
        workflows={"writer": lambda: build_workflow(folder)},
    )
    await runtime.launch()
    try:
        if mode == "start":
            run_id = await runtime.start(
                "writer", [ChatMessage.user("line")], session_id="s1", run_id=run_ids[0]
            )
            outcome = await runtime.outcome(run_id, max_wait=120)
            print(json.dumps({"text": outcome.response.text}), flush=True)
        elif mode == "recover":
            outcome = await runtime.outcome(run_ids[0], max_wait=120)
            print(json.dumps({"text": outcome.response.text}), flush=True)
        elif mode == "wf-start":
            run_id = await runtime.start_workflow("writer", "line", run_id=run_ids[0])
            result = await runtime.workflow_outcome(run_id, max_wait=120)
            print(json.dumps({"outputs": result.outputs}), flush=True)
        elif mode == "wf-recover":
            result = await runtime.workflow_outcome(run_ids[0], max_wait=120)
            print(json.dumps({"outputs": result.outputs}), flush=True)
        elif mode == "enqueue":
            for run_id in run_ids:
                await runtime.start(
                    "writer", [ChatMessage.user(run_id)], session_id=run_id, run_id=run_id
                )
            print("enqueued", flush=True)
        elif mode == "worker":
            print("ready", flush=True)
            await asyncio.sleep(float(run_ids[0]) if run_ids else 3600)
        else:
            print(f"unknown mode {mode!r}", file=sys.stderr)
            return 2
    finally:
        runtime.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
