"""A2A tasks kept in the session store: each owner sees its own, listed newest first in
pages whose size is what they hold, with filters checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.types import ListTasksRequest, Task, TaskState, TaskStatus
from a2a.utils.errors import InvalidParamsError

from raf.serve.a2a.tasks import stored_tasks
from raf.serve.hosting import SERVE_KEY
from raf.stores.sessions import SqliteSessionStore


class Caller(User):
    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self.name


def as_owner(name: str) -> ServerCallContext:
    return ServerCallContext(user=Caller(name))


def task(task_id: str, context_id: str, state: Any, second: int) -> Task:
    made = Task(id=task_id, context_id=context_id, status=TaskStatus(state=state))
    made.status.timestamp.FromSeconds(1_800_000_000 + second)
    return made


async def test_tasks_are_kept_per_owner_and_listed_in_pages(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "s.sqlite")
    tasks = stored_tasks(store)
    alice, bob = as_owner("a" * 32), as_owner("b" * 32)
    for n in range(5):
        state = TaskState.TASK_STATE_COMPLETED if n % 2 else TaskState.TASK_STATE_WORKING
        await tasks.save(task(f"t{n}", "ctx-1" if n < 3 else "ctx-2", state, n), alice)
    await tasks.save(task("theirs", "ctx-1", TaskState.TASK_STATE_WORKING, 9), bob)
    assert (await tasks.get("t1", alice)).status.state == TaskState.TASK_STATE_COMPLETED
    assert await tasks.get("t1", bob) is None  # another owner's is a missing one
    assert await tasks.get("../nope", alice) is None
    updated = task("t1", "ctx-1", TaskState.TASK_STATE_FAILED, 10)
    await tasks.save(updated, alice)
    assert (await tasks.get("t1", alice)).status.state == TaskState.TASK_STATE_FAILED

    first = await tasks.list(ListTasksRequest(page_size=2), alice)
    assert [t.id for t in first.tasks] == ["t1", "t4"]  # newest first
    assert (first.page_size, first.total_size) == (2, 5)
    rest = await tasks.list(ListTasksRequest(page_size=4, page_token=first.next_page_token), alice)
    assert [t.id for t in rest.tasks] == ["t3", "t2", "t0"]
    assert rest.page_size == 3 and not rest.next_page_token  # the size of what came back
    working = await tasks.list(ListTasksRequest(status=TaskState.TASK_STATE_WORKING), alice)
    assert sorted(t.id for t in working.tasks) == ["t0", "t2", "t4"]
    in_context = await tasks.list(ListTasksRequest(context_id="ctx-2"), alice)
    assert sorted(t.id for t in in_context.tasks) == ["t3", "t4"]
    with pytest.raises(InvalidParamsError, match="not a task state"):
        await tasks.list(ListTasksRequest(status=99), alice)  # type: ignore[arg-type]
    with pytest.raises(InvalidParamsError, match="page token"):
        await tasks.list(ListTasksRequest(page_token="garbage"), alice)

    await tasks.delete("t0", alice)
    await tasks.delete("t0", bob)  # nothing of bob's: nothing happens
    assert await tasks.get("t0", alice) is None
    # task records are never sessions of an agent
    for record_id in await store.list():
        assert SERVE_KEY not in (await store.load(record_id)).metadata
