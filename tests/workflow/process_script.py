"""A program the process tests start: runs, crashes, pauses and resumes workflows whose
checkpoints live in one SQLite file or PostgreSQL table, recording every node call in a file."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from raf import AgentBuilder, ApprovalRequiredTool, tool
from raf.testing import ScriptedChatClient, call, reply
from raf.workflow import (
    AnswerClaimedError,
    CheckpointStore,
    Executor,
    InputResponse,
    PostgresCheckpointStore,
    SqliteCheckpointStore,
    SuperstepStarted,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    latest_checkpoint,
)

CALLS = Path(os.environ["RAF_TEST_CALLS"])


def record(name: str) -> None:
    with CALLS.open("a", encoding="utf-8") as handle:
        handle.write(name + "\n")
        handle.flush()
        os.fsync(handle.fileno())


class Step(Executor):
    """Appends its name; the third hangs (to be killed) when asked to."""

    @handler
    async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
        record(self.id)
        if self.id == "c" and os.environ.get("RAF_TEST_HANG") == "1":
            time.sleep(120)  # block the whole process, as a stuck call would
        await ctx.send_message(f"{text}>{self.id}")


class Approve(Executor):
    """Asks a human to approve the text, then outputs the decision."""

    @handler
    async def ask(self, text: str, ctx: WorkflowContext[str]) -> None:
        record("ask")
        await ctx.request_input({"question": f"publish {text}?"}, bool)

    @handler
    async def answered(self, answer: InputResponse[bool], ctx: WorkflowContext[str]) -> None:
        record("answered")
        verdict = "published" if answer.response else "rejected"
        await ctx.yield_output(f"{verdict}: {answer.data['question']}")


@tool
def delete_file(path: str) -> str:
    """Delete a file (needs approval)."""
    record(f"delete {path}")
    return f"deleted {path}"


def chain(store: CheckpointStore) -> Workflow:
    a, b, c, d = (Step(n) for n in "abcd")
    return (
        WorkflowBuilder("chain", start=a)
        .add_chain([a, b, c, d])
        .with_checkpoint_store(store)
        .build()
    )


def approval(store: CheckpointStore) -> Workflow:
    return WorkflowBuilder("approval", start=Approve()).with_checkpoint_store(store).build()


def agent_flow(store: CheckpointStore, resumed: bool) -> Workflow:
    script = ["removed it"] if resumed else [reply("", call("delete_file", path="a.txt"))]
    agent = (
        AgentBuilder()
        .with_name("cleaner")
        .with_chat_client(ScriptedChatClient(script))
        .with_tool(ApprovalRequiredTool(delete_file))
        .build()
    )
    return WorkflowBuilder("cleanup", start=agent).with_checkpoint_store(store).build()


def wait_for_go() -> None:
    """With RAF_TEST_GO set, say "ready" and wait for the go file: processes started
    together then answer at the same moment."""
    go = os.environ.get("RAF_TEST_GO")
    if not go:
        return
    Path(f"{go}.ready.{os.getpid()}").touch()
    deadline = time.monotonic() + 30
    while not Path(go).exists():
        if time.monotonic() > deadline:
            raise SystemExit("never told to go")
        time.sleep(0.002)


async def main(mode: str, db: str, *args: str) -> None:
    store: CheckpointStore = SqliteCheckpointStore(db)
    if db.startswith("postgresql://"):  # a DSN, then '#' and the table
        dsn, table = db.split("#")
        store = PostgresCheckpointStore(dsn, table=table)
    try:
        await run_mode(store, mode, *args)
    except AnswerClaimedError as exc:
        print(json.dumps({"status": "refused", "error": str(exc)}))
    finally:
        if isinstance(store, PostgresCheckpointStore):
            await store.close()


async def run_mode(store: CheckpointStore, mode: str, *args: str) -> None:
    if mode == "chain":
        result = await chain(store).run("x")
    elif mode == "chain-resume":
        latest = await latest_checkpoint(store)
        result = await chain(store).run(checkpoint_id=latest.id)
    elif mode == "ask":
        result = await approval(store).run("report")
    elif mode == "answer":
        checkpoint_id, request_id, answer = args
        workflow = approval(store)
        await store.list()  # open the store before the race, as a long-lived server has
        wait_for_go()
        result = await workflow.run(
            checkpoint_id=checkpoint_id, responses={request_id: json.loads(answer)}
        )
    elif mode == "agent-ask":
        result = await agent_flow(store, resumed=False).run("clean up a.txt")
    elif mode == "agent-answer":
        checkpoint_id, request_id, answer = args
        result = await agent_flow(store, resumed=True).run(
            checkpoint_id=checkpoint_id, responses={request_id: json.loads(answer)}
        )
    else:
        raise SystemExit(f"unknown mode {mode}")
    outputs = [o if isinstance(o, str) else getattr(o, "text", repr(o)) for o in result.outputs]
    print(
        json.dumps(
            {
                "status": result.status,
                "outputs": outputs,
                "checkpoint_id": result.checkpoint_id,
                "requests": [
                    {"id": r.request_id, "node": r.node, "type": r.response_type}
                    for r in result.requests
                ],
                "supersteps": [
                    e.superstep for e in result.events if isinstance(e, SuperstepStarted)
                ],
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
