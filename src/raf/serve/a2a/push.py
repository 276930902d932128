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
`authentication` (scheme and credentials) as the `Authorization` header. Every
URL passes the outbound guard the webhooks pass (no private or loopback address unless
the server allows them, `--webhook-allow-private`), when it is set and again when the
notification is sent.
"""

from __future__ import annotations

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
from raf.stores.records import change_record

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext
    from a2a.types.a2a_pb2 import TaskPushNotificationConfig

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


def push_sender(configs: Any, policy: outbound.OutboundPolicy) -> Any:
    """The SDK's push sender, through the outbound guard, sending each change of a
    task's state (not each piece of its answer: artifact updates are not sent)."""
    from a2a.server.tasks import BasePushNotificationSender
    from a2a.types.a2a_pb2 import Task, TaskStatusUpdateEvent

    class GuardedPushSender(BasePushNotificationSender):
        """POSTs a task's state to its push-notification URLs (best effort: a failure
        is logged, never the task's)."""

        async def send_notification(self, task_id: str, event: Any) -> None:
            if isinstance(event, Task | TaskStatusUpdateEvent):
                await super().send_notification(task_id, event)

    client = outbound.guarded_async_client(policy, timeout=SEND_TIMEOUT, follow_redirects=False)
    return GuardedPushSender(client, configs, push_url_validator=push_url_check(policy))


__all__ = ["push_sender", "push_url_check", "stored_push_configs"]
