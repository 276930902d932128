"""A2A tasks kept in the server's session store, so that every worker sharing the store
knows every task: a continuation, `GetTask`, `ListTasks` or `CancelTask` may reach any
worker, not only the one that made the task.

Each task is one record of the store (an `AgentSession` holding the task's JSON in its
metadata, under a key scoped to the task's owner), written with the store's revision
check. Records carry no agent mark, so they are never served as sessions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raf.core.errors import (
    SessionError,
    SessionNotFoundError,
    SessionStoreError,
)
from raf.core.sessions import AgentSession, SessionStore
from raf.serve.requests import store_failure
from raf.serve.tenancy import Tenant
from raf.stores.records import change_record

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext
    from a2a.types.a2a_pb2 import ListTasksRequest, ListTasksResponse, Task

TASK_KEY = "raf_a2a_task"
"""Metadata key of a task record holding the task as JSON."""

TASK_PREFIX = "a2a-task."
"""What a task record's key starts with, after its owner's tag."""


def a2a_store_error(exc: SessionError) -> Any:
    """A failure of the store as A2A's internal error (the SDK's `InternalError`), told
    as every surface tells it (`session_store_error`, nothing of the store's address)."""
    from a2a.utils.errors import InternalError

    failure = store_failure(exc)
    return InternalError(
        message=f"{failure.code}: {failure.message}",
        data={"code": failure.code, "status": failure.status},
    )


def stored_tasks(store: SessionStore) -> Any:
    """An a2a-sdk `TaskStore` over `store` (the SDK is imported only here, when used)."""
    from a2a.server.tasks.task_store import TaskStore
    from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
    from a2a.utils.errors import InvalidParamsError
    from a2a.utils.task import (
        ListTasksCursor,
        decode_list_tasks_cursor,
        encode_list_tasks_cursor,
    )
    from google.protobuf.json_format import MessageToDict, ParseDict  # type: ignore[import-untyped]

    def owner(context: ServerCallContext) -> Tenant:
        user = context.user
        return Tenant(user.user_name if user is not None else "")

    def key(task_id: str, context: ServerCallContext) -> str:
        return owner(context).key(TASK_PREFIX + task_id)

    def sort_key(task: Task) -> tuple[bool, int, str]:
        stamped = task.HasField("status") and task.status.HasField("timestamp")
        return (stamped, task.status.timestamp.ToNanoseconds() if stamped else 0, task.id)

    class StoredTaskStore(TaskStore):
        """A2A tasks as records of the session store every worker shares."""

        async def save(self, task: Task, context: ServerCallContext) -> None:
            def put(record: AgentSession) -> bool:
                record.metadata[TASK_KEY] = MessageToDict(task)
                return True

            try:
                await change_record(store, key(task.id, context), put)
            except SessionStoreError as exc:
                raise a2a_store_error(exc) from None

        async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
            try:
                record = await store.load(key(task_id, context))
            except SessionNotFoundError:
                return None
            except SessionStoreError as exc:  # the store failed: not a task missing
                raise a2a_store_error(exc) from None
            except SessionError:  # an id no record can have
                return None
            return _task(record)

        async def delete(self, task_id: str, context: ServerCallContext) -> None:
            try:
                await store.delete(key(task_id, context))
            except SessionStoreError as exc:
                raise a2a_store_error(exc) from None
            except SessionError:
                return

        async def list(
            self, params: ListTasksRequest, context: ServerCallContext
        ) -> ListTasksResponse:
            from a2a.types import a2a_pb2

            if params.status and params.status not in a2a_pb2.TaskState.values():
                raise InvalidParamsError(f"status {params.status} is not a task state")
            if params.page_size < 0:
                raise InvalidParamsError("pageSize must not be negative")
            prefix = owner(context).key(TASK_PREFIX)
            tasks: list[Task] = []
            try:
                record_ids = await store.list()
            except SessionStoreError as exc:
                raise a2a_store_error(exc) from None
            for record_id in record_ids:
                if not record_id.startswith(prefix):
                    continue
                try:
                    found = _task(await store.load(record_id))
                except SessionStoreError as exc:  # not a record left out: the list fails
                    raise a2a_store_error(exc) from None
                except SessionError:  # deleted meanwhile, or damaged: left out
                    continue
                if found is not None and _wanted(found, params):
                    tasks.append(found)
            tasks.sort(key=sort_key, reverse=True)
            start = 0
            if params.page_token:
                cursor = decode_list_tasks_cursor(params.page_token)
                if cursor is None:
                    raise InvalidParamsError(f"page token {params.page_token!r} is not valid")
                after = cursor.sort_key()
                start = next((i for i, t in enumerate(tasks) if sort_key(t) < after), len(tasks))
            size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
            page = tasks[start : start + size]
            more = start + size < len(tasks)
            last = page[-1] if page else None
            token = (
                encode_list_tasks_cursor(
                    ListTasksCursor(
                        timestamp_ns=sort_key(last)[1] if sort_key(last)[0] else None,
                        task_id=last.id,
                    )
                )
                if more and last is not None
                else None
            )
            return a2a_pb2.ListTasksResponse(
                next_page_token=token, tasks=page, total_size=len(tasks), page_size=len(page)
            )

    def _task(record: AgentSession) -> Task | None:
        from a2a.types.a2a_pb2 import Task

        data = record.metadata.get(TASK_KEY)
        if not isinstance(data, dict):
            return None
        task: Task = ParseDict(data, Task(), ignore_unknown_fields=True)
        return task

    def _wanted(task: Task, params: ListTasksRequest) -> bool:
        if params.context_id and task.context_id != params.context_id:
            return False
        if params.status and task.status.state != params.status:
            return False
        if params.HasField("status_timestamp_after"):
            after = params.status_timestamp_after.ToNanoseconds()
            stamped = task.HasField("status") and task.status.HasField("timestamp")
            return bool(stamped and task.status.timestamp.ToNanoseconds() >= after)
        return True

    return StoredTaskStore()
