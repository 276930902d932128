"""A2A push notifications: each task's push-notification configs kept in the server's
session store (so a config set through one worker is used by the worker that runs the
task), and the sender that POSTs the task's state to them as it changes.

A task's configs are one record of the store (`a2a-push.<task id>`: task ids are the
server's own), each config with the owner that set it; a caller reads, lists and
deletes only its own, while the sender reaches every config of the task. A notification
is sent at each change of the task's state (submitted, working, then its end: completed,
failed, cancelled, rejected, or input or auth required), not for each piece of its
answer: the task or its status update as A2A's stream response (`{"task": …}` or
`{"statusUpdate": …}`), with the config's `token` in `X-A2A-Notification-Token` and its
`authentication` (scheme and credentials) as the `Authorization` header; one that fails
is retried with back-off, the task's later notifications to that URL waiting behind it
so they arrive in order. Every URL passes the outbound guard the webhooks pass (no
private or loopback address unless the server allows them, `--webhook-allow-private`),
when it is set and again when the notification is sent.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import TYPE_CHECKING, Any

from raf.core import outbound
from raf.core.errors import (
    SessionError,
    SessionNotFoundError,
    SessionStoreError,
)
from raf.core.sessions import AgentSession, SessionStore
from raf.serve.a2a.tasks import a2a_store_error
from raf.serve.tenancy import Tenant
from raf.serve.webhooks import RETRY_DELAYS
from raf.stores.records import change_record

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext
    from a2a.types.a2a_pb2 import TaskPushNotificationConfig

log = logging.getLogger("raf.serve")

PUSH_KEY = "raf_a2a_push"
"""Metadata key of a task's push record: its configs, each with its owner."""

PUSH_PREFIX = "a2a-push."
"""What a task's push record's key starts with (then the task's id)."""

SEND_TIMEOUT = 10.0
"""Seconds one notification may take."""


def _owner(context: ServerCallContext) -> str:
    user = context.user
    return Tenant(user.user_name if user is not None else "").owner


def push_url_check(policy: outbound.OutboundPolicy) -> Any:
    """The SDK's push-URL validator over the outbound guard: True for a URL the server
    may call; an invalid-params error that says why for any other."""
    from a2a.utils.errors import InvalidParamsError

    async def check(url: str) -> bool:
        try:
            await outbound.check_url(url, policy)
        except outbound.OutboundRefused as exc:
            raise InvalidParamsError(
                message=f"push notification URL {url!r} refused: {exc}"
            ) from None
        return True

    return check


def stored_push_configs(store: SessionStore) -> Any:
    """An a2a-sdk `PushNotificationConfigStore` over `store` (the SDK imported here)."""
    from a2a.server.tasks.push_notification_config_store import (
        PushNotificationConfigStore,
        normalize_push_notification_config,
    )
    from a2a.types.a2a_pb2 import TaskPushNotificationConfig
    from google.protobuf.json_format import MessageToDict, ParseDict  # type: ignore[import-untyped]

    def entries(record: AgentSession) -> list[dict[str, Any]]:
        kept = record.metadata.get(PUSH_KEY)
        return [e for e in kept if isinstance(e, dict)] if isinstance(kept, list) else []

    def config(entry: dict[str, Any]) -> TaskPushNotificationConfig:
        made = TaskPushNotificationConfig()
        ParseDict(entry.get("config", {}), made)
        return made

    class StoredPushConfigs(PushNotificationConfigStore):
        """Push-notification configs as records of the store every worker shares."""

        async def _load(self, task_id: str) -> AgentSession | None:
            try:
                return await store.load(PUSH_PREFIX + task_id)
            except SessionNotFoundError:
                return None
            except SessionStoreError as exc:
                raise a2a_store_error(exc) from None
            except SessionError:  # an id no record can have
                return None

        async def _change(self, task_id: str, change: Any) -> None:
            def changed(record: AgentSession) -> bool:
                record.metadata[PUSH_KEY] = change(entries(record))
                return True

            try:
                await change_record(store, PUSH_PREFIX + task_id, changed)
            except SessionStoreError as exc:
                raise a2a_store_error(exc) from None

        async def set_info(
            self,
            task_id: str,
            notification_config: TaskPushNotificationConfig,
            context: ServerCallContext,
        ) -> TaskPushNotificationConfig:
            kept = normalize_push_notification_config(task_id, notification_config)
            owner = _owner(context)
            entry = {"owner": owner, "config": MessageToDict(kept)}

            def change(old: list[dict[str, Any]]) -> list[dict[str, Any]]:
                others = [
                    e for e in old if not (e.get("owner") == owner and config(e).id == kept.id)
                ]
                return [*others, entry]

            await self._change(task_id, change)
            return kept

        async def get_info(
            self, task_id: str, context: ServerCallContext
        ) -> list[TaskPushNotificationConfig]:
            record = await self._load(task_id)
            owner = _owner(context)
            found = [] if record is None else entries(record)
            return [config(e) for e in found if e.get("owner") == owner]

        async def get_info_for_dispatch(self, task_id: str) -> list[TaskPushNotificationConfig]:
            record = await self._load(task_id)
            return [] if record is None else [config(e) for e in entries(record)]

        async def delete_info(
            self, task_id: str, context: ServerCallContext, config_id: str | None = None
        ) -> None:
            owner = _owner(context)
            gone = task_id if config_id is None else config_id

            def change(old: list[dict[str, Any]]) -> list[dict[str, Any]]:
                return [e for e in old if not (e.get("owner") == owner and config(e).id == gone)]

            if await self._load(task_id) is not None:
                await self._change(task_id, change)

    return StoredPushConfigs()


def push_sender(
    configs: Any,
    policy: outbound.OutboundPolicy,
    retry_delays: tuple[float, ...] = RETRY_DELAYS,
) -> Any:
    """The A2A push sender: each change of a task's state (not each piece of its answer:
    artifact updates are not sent) POSTed to each of the task's configs through the
    outbound guard, in order per task and URL, retried after `retry_delays` while it
    fails."""
    from a2a.server.tasks import PushNotificationSender
    from a2a.types.a2a_pb2 import Task, TaskStatusUpdateEvent
    from a2a.utils.proto_utils import to_stream_response
    from google.protobuf.json_format import MessageToDict

    client = outbound.guarded_async_client(policy, timeout=SEND_TIMEOUT, follow_redirects=False)

    async def post(task_id: str, body: dict[str, Any], config: Any) -> bool:
        """One attempt: True once the URL answered 2xx."""
        headers = {}
        if config.token:
            headers["X-A2A-Notification-Token"] = config.token
        auth = config.authentication
        if config.HasField("authentication") and auth.scheme and auth.credentials:
            headers["Authorization"] = f"{auth.scheme} {auth.credentials}"
        try:
            await outbound.check_url(config.url, policy)
            answer = await client.post(config.url, json=body, headers=headers)
        except Exception as exc:  # refused by the guard, no answer, timed out, reset
            log.warning("push notification for task %s not sent: %s", task_id, exc)
            return False
        if 200 <= answer.status_code < 300:
            return True
        log.warning("push notification for task %s answered %d", task_id, answer.status_code)
        return False

    class GuardedPushSender(PushNotificationSender):
        """POSTs a task's state to its push-notification URLs. A notification is sent at
        once when nothing for its task and URL waits before it; one that fails is retried
        in the background, and the task's later notifications to that URL queue behind
        it, so each URL gets a task's states in order. Best effort: after the last retry
        it is logged and dropped (the task's own state never depends on it)."""

        def __init__(self) -> None:
            self.waiting: dict[tuple[str, str], collections.deque[tuple[dict[str, Any], Any]]] = {}
            """Notifications that wait for an earlier one's retries, by task and URL."""
            self.retrying: set[asyncio.Task[None]] = set()

        async def send_notification(self, task_id: str, event: Any) -> None:
            if not isinstance(event, Task | TaskStatusUpdateEvent):
                return
            try:
                found = await configs.get_info_for_dispatch(task_id)
            except Exception as exc:  # the store failed: the task goes on without it
                log.warning("push configs of task %s not read: %s", task_id, exc)
                return
            # the state as it is now: the SDK goes on changing the same task object
            body = MessageToDict(to_stream_response(event))
            await asyncio.gather(*(self._send(task_id, body, config) for config in found))

        async def _send(self, task_id: str, body: dict[str, Any], config: Any) -> None:
            key = (task_id, config.url)
            queue = self.waiting.get(key)
            if queue is not None:  # an earlier notification is being retried: after it
                queue.append((body, config))
                return
            if await post(task_id, body, config) or not retry_delays:
                return
            self.waiting[key] = collections.deque([(body, config)])
            retry = asyncio.get_running_loop().create_task(self._retry(key))
            self.retrying.add(retry)
            retry.add_done_callback(self.retrying.discard)

        async def _retry(self, key: tuple[str, str]) -> None:
            """Send what waits for `key`, in order: the first (which failed once) after
            the retry delays, each later one at once and then after the delays."""
            queue = self.waiting[key]
            delays = retry_delays
            try:
                while queue:
                    body, config = queue[0]
                    for delay in delays:
                        await asyncio.sleep(delay)
                        if await post(key[0], body, config):
                            break
                    else:
                        log.warning(
                            "push notification for task %s to %s dropped after its retries",
                            key[0],
                            config.url,
                        )
                    queue.popleft()
                    delays = (0.0, *retry_delays)
            finally:
                del self.waiting[key]

    return GuardedPushSender()


__all__ = ["push_sender", "push_url_check", "stored_push_configs"]
