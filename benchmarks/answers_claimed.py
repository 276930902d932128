"""Exactly-once answers: in each trial a workflow pauses on a question, then two
processes answer its checkpoint at the same moment; the trial counts how many times the
answering node ran (it must be once) and that the other process was refused.

The processes are forked from this one after the workflow is built, and wait at a barrier,
so both resume the checkpoint together. SQLite by default; `--postgres` also starts a
private PostgreSQL on loopback (from the Debian packages) and runs the same trials there.
`--durable N` also runs N trials of the durable path: a durable workflow run paused in
one process, answered by two more (tests/durable/answer_app.py; the system database in
SQLite, and in PostgreSQL with `--postgres`).

    python benchmarks/answers_claimed.py [--trials 100] [--postgres] [--durable 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from multiprocessing.synchronize import Barrier
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the test servers' helpers live in tests/servers.py

from tests.servers import Server, start_postgres  # noqa: E402

from raf.workflow import (  # noqa: E402
    AnswerClaimedError,
    CheckpointStore,
    Executor,
    InputResponse,
    PostgresCheckpointStore,
    SqliteCheckpointStore,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)


class Ask(Executor):
    """Asks a question; appends a line to the calls file each time the answer runs."""

    def __init__(self, calls: Path) -> None:
        super().__init__("ask")
        self.calls = calls

    @handler
    async def start(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.request_input({"q": text}, bool)

    @handler
    async def answered(self, answer: InputResponse[bool], ctx: WorkflowContext[str]) -> None:
        with self.calls.open("a") as handle:
            handle.write("answered\n")
        await ctx.yield_output(str(answer.response))


def _store(where: str) -> CheckpointStore:
    if where.startswith("postgresql://"):
        dsn, table = where.split("#")
        return PostgresCheckpointStore(dsn, table=table)
    return SqliteCheckpointStore(where)


def _build(where: str, calls: Path) -> Workflow:
    return WorkflowBuilder("ask", start=Ask(calls)).with_checkpoint_store(_store(where)).build()


def _answer(where: str, calls: Path, cp: str, rid: str, go: Barrier, out: mp.Queue[str]) -> None:
    async def main() -> str:
        workflow = _build(where, calls)
        store = workflow.checkpoint_store
        await store.list()  # connect before the race
        go.wait(timeout=60)
        try:
            await workflow.run(checkpoint_id=cp, responses={rid: True})
            return "completed"
        except AnswerClaimedError:
            return "refused"
        finally:
            if isinstance(store, PostgresCheckpointStore):
                await store.close()

    out.put(asyncio.run(main()))


def trial(where: str, folder: Path) -> tuple[int, list[str]]:
    """One trial: the number of times the node ran, and what each process saw."""
    calls = folder / f"{uuid.uuid4().hex}.calls"
    calls.touch()

    async def ask() -> tuple[str, str]:
        workflow = _build(where, calls)
        paused = await workflow.run("ship?")
        if isinstance(workflow.checkpoint_store, PostgresCheckpointStore):
            await workflow.checkpoint_store.close()
        assert paused.checkpoint_id is not None
        return paused.checkpoint_id, paused.requests[0].request_id

    cp, rid = asyncio.run(ask())
    ctx = mp.get_context("fork")
    go = ctx.Barrier(2)
    out: mp.Queue[str] = ctx.Queue()
    procs = [ctx.Process(target=_answer, args=(where, calls, cp, rid, go, out)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        if p.is_alive():
            p.kill()
            p.join()
    seen = sorted(out.get(timeout=5) for p in procs if p.exitcode == 0)
    return len(calls.read_text().splitlines()), seen


def run(name: str, where: str, folder: Path, trials: int) -> None:
    once = 0
    for i in range(trials):
        ran, seen = trial(where.replace("{i}", str(i)), folder)
        once += ran == 1 and seen == ["completed", "refused"]
        if ran != 1:
            print(f"  {name} trial {i}: the node ran {ran} times ({seen})")
    print(f"{name}: the answering node ran exactly once in {once} of {trials} trials")


ANSWER_APP = ROOT / "tests" / "durable" / "answer_app.py"


def _app(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(ANSWER_APP), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _last_line(process: subprocess.Popen[str]) -> str:
    try:
        out, err = process.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    if process.returncode != 0:
        return f"failed: {err.strip().splitlines()[-1:] if err else process.returncode}"
    return out.strip().splitlines()[-1]


def durable_trial(database: str, folder: Path) -> tuple[int, list[str]]:
    """One durable trial: how often the node ran, and what each answering process saw."""
    folder.mkdir()
    asker = _app("ask", database, str(folder), "publish-1")
    answerers: list[subprocess.Popen[str]] = []
    try:
        assert asker.stdout is not None
        if asker.stdout.readline().strip() != "paused":
            return 0, [f"the run did not pause: {_last_line(asker)}"]
        answerers = [_app("answer", database, str(folder), "publish-1", "2") for _ in range(2)]
        seen = sorted(json.loads(_last_line(p)).get("status", "?") for p in answerers)
        _last_line(asker)
    except ValueError as exc:
        seen = [f"unreadable: {exc}"]
    finally:
        for process in (asker, *answerers):
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
    answered = folder / "answered.txt"
    return (len(answered.read_text().splitlines()) if answered.exists() else 0), seen


def run_durable(name: str, database_of: Callable[[int], str], folder: Path, trials: int) -> None:
    once = 0
    for i in range(trials):
        ran, seen = durable_trial(database_of(i), folder / f"durable-{name}-{i}")
        once += ran == 1 and seen == ["completed", "refused"]
        if ran != 1 or seen != ["completed", "refused"]:
            print(f"  durable {name} trial {i}: the node ran {ran} times ({seen})")
    print(f"durable, {name}: the answering node ran exactly once in {once} of {trials} trials")


def _fresh_database(server: Server, i: int) -> str:
    import psycopg

    name = f"durable_bench_{i}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server.url, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    return f"{server.url.rpartition('/')[0]}/{name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--postgres", action="store_true", help="also on PostgreSQL")
    parser.add_argument("--durable", type=int, default=0, help="durable trials (default none)")
    args = parser.parse_args()
    from raf.durable import sqlite_url

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.trials:
            run("SQLite", str(folder / "cp{i}.sqlite"), folder, args.trials)
        if args.durable:
            run_durable(
                "SQLite",
                lambda i: sqlite_url(folder / f"durable-SQLite-{i}" / "dbos.sqlite"),
                folder,
                args.durable,
            )
        if args.postgres:
            server = start_postgres()
            try:
                if args.trials:
                    run("PostgreSQL", f"{server.url}#cp_bench_{{i}}", folder, args.trials)
                if args.durable:
                    pg = server
                    run_durable(
                        "PostgreSQL", lambda i: _fresh_database(pg, i), folder, args.durable
                    )
            finally:
                server.stop()


if __name__ == "__main__":
    main()
