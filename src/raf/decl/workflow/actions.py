"""The actions that set variables, talk to the user and keep conversations; the table of
every action kind's implementation."""

from __future__ import annotations

import json
from typing import Any

from raf.decl.powerfx.values import text, truthy, type_word
from raf.decl.powerfx.variables import VariableError
from raf.decl.workflow.conversations import (
    as_record,
    copy_messages,
    retrieve_message,
    retrieve_messages,
)
from raf.decl.workflow.invoke import (
    execute_code,
    http_request,
    invoke_agent,
    invoke_function_tool,
    invoke_mcp_tool,
    resume_agent,
    resume_function_tool,
    resume_mcp_tool,
)
from raf.decl.workflow.program import Step
from raf.decl.workflow.questions import YES, question, resume_question
from raf.decl.workflow.runtime import Action, Resume, Runtime
from raf.decl.workflow.tables import edit_table


async def set_variable(rt: Runtime, step: Step) -> None:
    target = step.fields.get("variable") or step.fields.get("path")
    rt.set(target, await rt.value(step.fields["value"]))


async def set_multiple(rt: Runtime, step: Step) -> None:
    for item in step.fields["assignments"]:
        rt.set(item["variable"], await rt.value(item["value"]))


async def set_text(rt: Runtime, step: Step) -> None:
    rt.set(step.fields["variable"], await rt.render(step.fields["value"]))


async def reset_variable(rt: Runtime, step: Step) -> None:
    from raf.decl.workflow.program import local_path

    rt.vars.reset(local_path(str(step.fields["variable"])))


_CLEAR_SCOPES = {
    "conversationscopedvariables": "Local",
    "topic": "Local",
    "allglobalvariables": "Global",
    "userscopedvariables": "Global",
}
"""MAF's names for what ClearAllVariables clears, as raf's scopes."""


async def clear_all(rt: Runtime, step: Step) -> None:
    """Clear a scope (Local, Global or Workflow.Outputs, or MAF's names for them);
    `ConversationHistory` empties the run's conversation."""
    raw = str(await rt.value(step.fields.get("variables", "Local")))
    if raw.lower() == "conversationhistory":
        (await rt.conversation()).clear()
        return
    scope = _CLEAR_SCOPES.get(raw.lower(), raw)
    try:
        rt.vars.clear(scope)
    except VariableError as exc:
        raise rt.fail(str(exc)) from None


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "boolean": (bool,),
    "record": (dict,),
    "table": (list,),
}


async def parse_value(rt: Runtime, step: Step) -> None:
    """Parse text (JSON, a number, true/false) into a value of the asked type."""
    raw = await rt.value(step.fields["value"])
    wanted = str(step.fields.get("valueType", "")).lower() or None
    value: Any = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            if wanted not in (None, "string"):
                raise rt.fail(f"cannot parse {raw[:80]!r} as {wanted}") from None
            value = raw
    if wanted == "string":
        value = raw if isinstance(raw, str) else text(raw)
    elif wanted is not None:
        kinds = _TYPES.get(wanted)
        if kinds is None:
            raise rt.fail(f"unknown valueType {wanted!r}; use one of {', '.join(_TYPES)}")
        if not isinstance(value, kinds) or (wanted == "number" and isinstance(value, bool)):
            raise rt.fail(f"the value is {type_word(value)}, not a {wanted}")
    rt.set(step.fields["variable"], value)


async def append_value(rt: Runtime, step: Step) -> None:
    """Add a row to the end of the table a variable holds (a blank one becomes a table;
    a single value becomes the table's first row); a text gets the value joined on."""
    from raf.decl.workflow.program import local_path

    path = step.fields["variable"]
    current = rt.vars.get(local_path(str(path)))
    value = await rt.value(step.fields["value"])
    if isinstance(current, str):
        rt.set(path, current + text(value))
        return
    rows = [] if current is None else current if isinstance(current, list) else [current]
    rt.set(path, [*rows, value])


async def emit_event(rt: Runtime, step: Step) -> None:
    """An event for the host: an output of the run, `{eventName, eventValue}`."""
    fields = step.fields
    raw = fields.get("event")
    event: dict[str, Any] = raw if isinstance(raw, dict) else {}
    name = await rt.value(fields["eventName"] if "eventName" in fields else event.get("name"))
    value = await rt.value(fields["eventValue"] if "eventValue" in fields else event.get("data"))
    await rt.ctx.yield_output({"eventName": text(name), "eventValue": value})


def _answer_to(step: Step, default: str) -> str:
    """Where an answer is kept: the step's `variable`, else `default`."""
    return str(step.fields.get("variable") or default)


async def confirmation(rt: Runtime, step: Step) -> Any:
    """Ask a yes/no question; the answer is kept as a boolean (in `Local.confirmed`
    unless `variable` says where)."""
    fields = step.fields
    asked = await rt.render(fields.get("message", ""))
    (await rt.conversation()).append({"role": "assistant", "text": asked})
    default = truthy(await rt.value(fields.get("defaultValue", False)))
    return await rt.ask(asked, object, {"default": default})


async def resume_confirmation(rt: Runtime, step: Step, then: dict[str, Any], answer: Any) -> None:
    if answer is None or answer == "":
        confirmed = bool(then.get("default"))
    elif isinstance(answer, str):
        confirmed = answer.strip().lower() in YES
    else:
        confirmed = bool(answer)
    (await rt.conversation()).append({"role": "user", "text": text(answer)})
    rt.set(_answer_to(step, "Local.confirmed"), confirmed)


async def wait_for_input(rt: Runtime, step: Step) -> Any:
    """Say the prompt (if any) and wait for the user's next message; it is kept in
    `Local.input` unless `variable` says where."""
    prompt = step.fields.get("prompt")
    asked = await rt.render(prompt) if prompt is not None else ""
    if asked:
        await rt.say(asked)
    return await rt.ask(asked or "Waiting for input...", str, {})


async def resume_wait_for_input(rt: Runtime, step: Step, then: dict[str, Any], answer: Any) -> None:
    said = text(answer)
    (await rt.conversation()).append({"role": "user", "text": said})
    rt.vars.set_system("LastMessage", {"Text": said, "Role": "user"})
    rt.set(_answer_to(step, "Local.input"), said)


async def send_activity(rt: Runtime, step: Step) -> None:
    await rt.say(await rt.render(step.fields["activity"]))


async def send_message(rt: Runtime, step: Step) -> None:
    """SendMessage (Copilot Studio's spelling): a message to the user, kept in the
    conversation it names (the run's own by default)."""
    await rt.say(await rt.render(step.fields["message"]), step.fields.get("conversationId"))


async def create_conversation(rt: Runtime, step: Step) -> None:
    rt.set(step.fields["conversationId"], rt.new_conversation())


async def add_message(rt: Runtime, step: Step) -> None:
    """Add a message to a conversation: `message` as its text (or a `{role, text}`
    mapping), or, in the .NET engine's shape, `content` items (`{type, value}`) as its
    text and `message` as the variable that keeps the added message's record."""
    fields = step.fields
    message = fields.get("message")
    role = str(await rt.value(fields.get("role", "user"))).lower()
    keep_in: str | None = None
    if isinstance(message, dict):
        role = str(await rt.value(message.get("role", role))).lower()
        body = await rt.render(message.get("text", message.get("content", "")))
    elif "content" in fields and isinstance(message, str):
        keep_in = message
        body = await _content_text(rt, fields["content"])
    else:
        body = await rt.render(
            message if message is not None else fields.get("content", fields.get("text", ""))
        )
    if role not in ("user", "assistant", "system"):
        raise rt.fail(f"a message role is user, assistant or system, not {role!r}")
    entry = {"role": role, "text": body}
    (await rt.conversation(fields["conversationId"])).append(entry)
    if keep_in is not None:
        rt.set(keep_in, as_record(entry))


async def _content_text(rt: Runtime, content: Any) -> str:
    """The text of a message's content items (`{type: Text, value: ...}`), one a line."""
    items = content if isinstance(content, list) else [content]
    parts = []
    for item in items:
        if isinstance(item, dict) and "value" in item:
            parts.append(await rt.render(item["value"]))
        else:
            parts.append(await rt.render(item))
    return "\n".join(parts)


async def _nothing(rt: Runtime, step: Step) -> None:
    """Control actions are instructions of the program; nothing runs for them here."""


ACTIONS: dict[str, Action] = {
    "SetVariable": set_variable,
    "SetValue": set_variable,
    "SetMultipleVariables": set_multiple,
    "SetTextVariable": set_text,
    "AppendValue": append_value,
    "EmitEvent": emit_event,
    "Confirmation": confirmation,
    "WaitForInput": wait_for_input,
    "ResetVariable": reset_variable,
    "ClearAllVariables": clear_all,
    "ParseValue": parse_value,
    "SendActivity": send_activity,
    "SendMessage": send_message,
    "Question": question,
    "RequestExternalInput": question,
    "CreateConversation": create_conversation,
    "AddConversationMessage": add_message,
    "InvokeAgent": invoke_agent,
    "InvokeFunctionTool": invoke_function_tool,
    "ExecuteCode": execute_code,
    "InvokeMcpTool": invoke_mcp_tool,
    "HttpRequestAction": http_request,
    "CopyConversationMessages": copy_messages,
    "RetrieveConversationMessages": retrieve_messages,
    "RetrieveConversationMessage": retrieve_message,
    "EditTable": edit_table,
    "EditTableV2": edit_table,
}
"""The implementation of every action kind that is not control flow."""

RESUMERS: dict[str, Resume] = {
    "Question": resume_question,
    "RequestExternalInput": resume_question,
    "Confirmation": resume_confirmation,
    "WaitForInput": resume_wait_for_input,
    "InvokeFunctionTool": resume_function_tool,
    "InvokeAgent": resume_agent,
    "InvokeMcpTool": resume_mcp_tool,
}
"""What takes the answer of an action that asked for input."""
