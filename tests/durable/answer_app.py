"""A durable workflow run paused on a question, and processes answering it (run as a
script by tests/durable/test_answer_processes.py).

`python answer_app.py ask DB_URL FOLDER RUN_ID`: starts the workflow run RUN_ID, prints
`paused` once it waits for its answer, then waits for the run to finish and prints its
outputs as JSON.

`python answer_app.py answer DB_URL FOLDER RUN_ID N`: finds the paused run, writes
FOLDER/ready-<pid>, waits until N such files exist (so N answering processes send at
the same moment), answers the question and prints `{"status": "completed"}` or
`{"status": "refused", "error": …}`.

The answering node appends a line to FOLDER/answered.txt each time it runs. Each process
has an executor id of its own, so none recovers another's run.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from raf.core.sessions import SessionStore
from raf.durable import DurableRuntime
from raf.stores.postgres_sessions import PostgresSessionStore
from raf.stores.sessions import SqliteSessionStore
from raf.workflow import (
    AnswerClaimedError,
    Executor,
    InputResponse,
    SqliteCheckpointStore,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)


class Publish(Executor):
    """Asks whether to publish; records each time the answer is acted on."""

    def __init__(self, folder: Path) -> None:
        super().__init__("publish")
        self.folder = folder

    @handler
    async def draft(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.request_input({"draft": text}, bool)

    @handler
    async def decided(self, answer: InputResponse[bool], ctx: WorkflowContext[str]) -> None:
        with (self.folder / "answered.txt").open("a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()} {answer.response}\n")
            handle.flush()
            os.fsync(handle.fileno())
        await ctx.yield_output(f"{answer.data['draft']}: {answer.response}")


def build_workflow(folder: Path) -> Workflow:
    store = SqliteCheckpointStore(folder / "checkpoints.sqlite")
    return WorkflowBuilder("publish", start=Publish(folder)).with_checkpoint_store(store).build()


def build_store(database: str, folder: Path) -> SessionStore:
    if database.startswith("postgresql://"):
        return PostgresSessionStore(database)
    return SqliteSessionStore(folder / "sessions.sqlite")


def wait_for_peers(folder: Path, count: int) -> None:
    (folder / f"ready-{os.getpid()}").write_text("ready")
    deadline = time.monotonic() + 60
    while len(list(folder.glob("ready-*"))) < count:
        if time.monotonic() > deadline:
            raise TimeoutError("the other answering processes did not get ready")
        time.sleep(0.005)


async def main(argv: list[str]) -> int:
    mode, database, folder_name, run_id, *rest = argv
    folder = Path(folder_name)
    runtime = DurableRuntime(
        [],
        store=build_store(database, folder),
        database=database,
        executor_id=f"{mode}-{os.getpid()}",
        workflows={"publish": lambda: build_workflow(folder)},
    )
    await runtime.launch()
    try:
        if mode == "ask":
            await runtime.start_workflow("publish", "owls", run_id=run_id)
            paused = await runtime.workflow_outcome(run_id, max_wait=60)
            assert paused.status == "paused", paused
            print("paused", flush=True)
            done = await runtime.workflow_outcome(run_id, 1, max_wait=120)
            print(json.dumps({"outputs": done.outputs}), flush=True)
        elif mode == "answer":
            paused = await runtime.workflow_outcome(run_id, max_wait=60)
            wait_for_peers(folder, int(rest[0]))
            answer = {paused.requests[0].request_id: True}
            try:
                await runtime.answer_workflow(paused, answer, max_wait=60)
                print(json.dumps({"status": "completed"}), flush=True)
            except AnswerClaimedError as exc:
                print(json.dumps({"status": "refused", "error": str(exc)}), flush=True)
        else:
            print(f"unknown mode {mode!r}", file=sys.stderr)
            return 2
    finally:
        runtime.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
