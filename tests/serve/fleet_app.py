"""One worker of a fleet: an agent whose tool needs approval and a workflow that asks a
question, served over HTTP on a store that other workers share (run as a script by
tests/serve/test_fleet.py, several processes at once).

`python fleet_app.py STORE FOLDER [--lease-seconds S] [--no-leases]`

STORE names the shared session store (a SQLite file, a folder, `postgresql://…`); the
workflow's checkpoints are kept beside it (SQLite in FOLDER, or a table of the same
PostgreSQL database). `echo` answers with the user messages it was given. Prints
`port N` once it serves on loopback. Every time the tool runs it appends `<pid> <note>`
to FOLDER/ran.txt, and every time the workflow's answering node runs it appends
`<pid> <draft>` to FOLDER/node.txt, each flushed to disk before anything else happens,
so the test counts what really ran. `hold` is a tool that sleeps for the seconds it is
given (a run to kill mid-way). `--no-leases` hides the store's leases, to show that the
approval claim alone still runs a call once.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raf import AgentBuilder, tool
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.core.sessions import AgentSession, SessionStore
from raf.serve import AgentHost, ServeSecurity, create_app
from raf.serve.limits import ServeLimits
from raf.serve.server import bind, serve_socket
from raf.stores.checkpoints import SqliteCheckpointStore
from raf.stores.urls import open_session_store
from raf.testing import FunctionChatClient, call, reply
from raf.workflow import (
    Executor,
    InputResponse,
    WorkflowAgent,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)


def append(path: Path, line: str) -> None:
    """One line, on disk before the caller goes on."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"{line}\n")
        handle.flush()
        os.fsync(handle.fileno())


def clerk_model(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage:
    """Asks for `record` with the user's note (or `hold` for `hold N`), then says done."""
    last = messages[-1]
    if last.role is Role.TOOL:
        return reply("done")
    note = last.text.strip()
    if note.startswith("hold "):
        return reply("", call("hold", {"seconds": float(note.split()[1])}, call_id="c-hold"))
    return reply("", call("record", {"note": note}, call_id=f"c-{note}"))


def echo_model(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage:
    """Answers with every user message it was given, joined: what the worker knew of the
    conversation."""
    return reply(" | ".join(m.text for m in messages if m.role is Role.USER))


class Publish(Executor):
    """Asks whether to publish a draft; records each time an answer is acted on."""

    def __init__(self, folder: Path) -> None:
        super().__init__("publish")
        self.folder = folder

    @handler
    async def draft(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.request_input({"draft": text}, bool)

    @handler
    async def decided(self, answer: InputResponse[bool], ctx: WorkflowContext[str]) -> None:
        append(self.folder / "node.txt", f"{os.getpid()} {answer.data['draft']}")
        await ctx.yield_output(f"{answer.data['draft']}: {answer.response}")


class WithoutLeases:
    """A store with its four methods only (its leases hidden)."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    async def save(self, session: AgentSession) -> None:
        await self.store.save(session)

    async def load(self, session_id: str) -> AgentSession:
        return await self.store.load(session_id)

    async def delete(self, session_id: str) -> bool:
        return await self.store.delete(session_id)

    async def list(self) -> list[str]:
        return await self.store.list()


def build_host(where: str, folder: Path, lease_seconds: float, leases: bool) -> AgentHost:
    @tool(approval_required=True)
    def record(note: str) -> str:
        """Record a note (each run of this call is counted)."""
        append(folder / "ran.txt", f"{os.getpid()} {note}")
        return f"recorded {note}"

    @tool
    async def hold(seconds: float) -> str:
        """Take `seconds` to answer."""
        append(folder / "holding.txt", str(os.getpid()))
        await asyncio.sleep(seconds)
        return "held"

    clerk = (
        AgentBuilder("clerk")
        .with_chat_client(FunctionChatClient(clerk_model))
        .with_tool(record)
        .with_tool(hold)
        .build()
    )
    checkpoints: Any
    if where.startswith("postgresql://"):
        from raf.stores.postgres_checkpoints import PostgresCheckpointStore

        checkpoints = PostgresCheckpointStore(where, table="fleet_checkpoints")
    else:
        checkpoints = SqliteCheckpointStore(folder / "checkpoints.sqlite")
    workflow = (
        WorkflowBuilder("publish", start=Publish(folder)).with_checkpoint_store(checkpoints).build()
    )
    echo = AgentBuilder("echo").with_chat_client(FunctionChatClient(echo_model)).build()
    store = open_session_store(where)
    return AgentHost(
        [clerk, WorkflowAgent(workflow, name="publisher"), echo],
        store=store if leases else WithoutLeases(store),
        lease_seconds=lease_seconds,
    )


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("folder")
    parser.add_argument("--lease-seconds", type=float, default=30.0)
    parser.add_argument("--no-leases", action="store_true")
    args = parser.parse_args(argv)
    host = build_host(args.store, Path(args.folder), args.lease_seconds, not args.no_leases)
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    # the trials send many requests at once from one address: no rate limit here
    security = ServeSecurity.for_bind("127.0.0.1", limits=ServeLimits(rate_per_second=0))
    app = create_app(host, security, agui=False)
    await serve_socket(app, sock, on_started=lambda: print(f"port {port}", flush=True))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main(sys.argv[1:])))
    except KeyboardInterrupt:
        sys.exit(0)
