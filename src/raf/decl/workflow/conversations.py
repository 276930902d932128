"""Actions on conversations beyond adding to them: copying messages into one and reading
messages back as message records (`Role`, `Text`, `Content`, `Id`), in both the shape
Microsoft's .NET engine reads (`conversationId` + `messages`) and its Python engine's
(`sourceConversationId`, `targetConversationId`, `count`)."""

from __future__ import annotations

from typing import Any

from raf.core.messages import new_id
from raf.decl.powerfx.values import message_record, text, truthy
from raf.decl.workflow.program import Step
from raf.decl.workflow.runtime import Runtime

_ROLES = {"user": "user", "assistant": "assistant", "agent": "assistant", "system": "system"}


def as_record(entry: dict[str, Any]) -> dict[str, Any]:
    """A kept conversation entry as a message record."""
    record = message_record(str(entry.get("role", "user")), text(entry.get("text")))
    record["Id"] = entry.setdefault("id", new_id("msg"))
    return record


def as_entry(value: Any) -> dict[str, Any]:
    """A message record, a `{role, text|content}` mapping or text, as a kept entry."""
    if isinstance(value, dict):
        role = str(value.get("Role", value.get("role", "user"))).lower()
        said = value.get("Text", value.get("text", value.get("content", value.get("Content"))))
        return {"role": _ROLES.get(role, "user"), "text": text(said), "id": new_id("msg")}
    return {"role": "user", "text": text(value), "id": new_id("msg")}


async def copy_messages(rt: Runtime, step: Step) -> None:
    """Copy messages into a conversation: `messages` (an expression) into
    `conversationId`, or the last `count` messages of `sourceConversationId` into
    `targetConversationId`."""
    fields = step.fields
    if "sourceConversationId" in fields or "targetConversationId" in fields:
        if "sourceConversationId" not in fields or "targetConversationId" not in fields:
            raise rt.fail("give both sourceConversationId and targetConversationId")
        source = await rt.conversation(fields["sourceConversationId"])
        count = fields.get("count")
        chosen = source[-int(await rt.value(count)) :] if count is not None else list(source)
        target = await rt.conversation(fields["targetConversationId"])
        target.extend({**m, "id": new_id("msg")} for m in chosen)
        return
    if "messages" not in fields:
        raise rt.fail("CopyConversationMessages needs messages (or sourceConversationId)")
    value = await rt.value(fields["messages"])
    items = value if isinstance(value, list) else [value]
    (await rt.conversation(fields.get("conversationId"))).extend(
        as_entry(item) for item in items if item is not None
    )


async def retrieve_messages(rt: Runtime, step: Step) -> None:
    """Keep a conversation's messages (newest last; `limit` keeps the newest n,
    `sortOrder: descending` or `newestFirst: true` puts the newest first) in the
    `messages` variable."""
    fields = step.fields
    entries = await rt.conversation(fields.get("conversationId"))
    records = [as_record(e) for e in entries]
    limit = fields.get("limit")
    if limit is not None:
        n = int(await rt.value(limit))
        records = records[-n:] if n > 0 else []
    order = str(await rt.value(fields.get("sortOrder", "ascending")))
    descending = order.lower().startswith("desc")
    if descending or truthy(await rt.value(fields.get("newestFirst", False))):
        records.reverse()
    rt.set(fields["messages"], records)


async def retrieve_message(rt: Runtime, step: Step) -> None:
    """Keep one message of a conversation, by its id, in the `message` variable."""
    fields = step.fields
    wanted = text(await rt.value(fields["messageId"]))
    for entry in await rt.conversation(fields.get("conversationId")):
        record = as_record(entry)
        if record["Id"] == wanted:
            rt.set(fields["message"], record)
            return
    raise rt.fail(f"no message {wanted!r} in the conversation")
