"""Reads the original framework's `kind: workflow` documents as raf's own: its actions'
snake_case fields under raf's names, its `output` mappings, HTTP body kinds, trigger kinds,
`inputSchema` and sandbox settings. What raf cannot honour is read with a located warning
that says what to write instead; nothing the original accepts is refused here."""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import urlencode

from raf.decl.documents.dialects.rewriter import Rewriter
from raf.decl.documents.source import Document, KeyPath
from raf.decl.documents.suggest import suggest

_RENAMES: dict[str, str] = {
    "conversation_id": "conversationId",
    "item_name": "itemName",
    "index_name": "indexName",
    "else_actions": "elseActions",
    "require_approval": "requireApproval",
    "response_headers": "responseHeaders",
    "function_name": "functionName",
    "server_url": "serverUrl",
    "tool_name": "toolName",
    "action_id": "actionId",
    "display_name": "displayName",
}
"""The original's snake_case action fields, each read as raf's key."""
_NESTED_RENAMES: dict[str, dict[str, str]] = {
    "input": {"external_loop": "externalLoop"},
    "output": {"response_object": "responseObject", "auto_send": "autoSend"},
}
"""snake_case keys inside an action's `input` and `output` mappings."""
_LISTS = ("actions", "then", "else", "elseActions", "else_actions")
_LOOP_CONTROLS = ("BreakLoop", "ContinueLoop")
"""The keys of an action that hold actions."""
_SANDBOX_SPELLINGS = {"timeout_secs": "timeout", "timeoutSecs": "timeout"}
_SANDBOX_IGNORED = ("memory_limit", "python_image", "node_image", "cpus", "pids_limit", "export")
"""Settings of the original's docker, podman and wasm code sandboxes."""
_INPUT_KINDS = {"float": "number", "double": "number", "int": "integer", "bool": "boolean"}
TRIGGER = "OnConversationStart"
"""The trigger raf starts every workflow on."""


def is_original_workflow(data: Any) -> bool:
    """Whether `data` is a workflow in the original framework's spelling (`kind:
    workflow` with a trigger), which raf's own `kind: workflow` shares."""
    return isinstance(data, dict) and data.get("kind") == "workflow" and "trigger" in data


def normalize_workflow(doc: Document) -> None:
    """Rewrite an original-framework workflow in `doc.data` into raf's spelling, in place;
    positions follow the values, warnings land in `doc.warnings`."""
    if not is_original_workflow(doc.data):
        return
    doc.data = copy.deepcopy(doc.data)  # a caller's mapping is read, never changed
    rw = Rewriter(doc)
    _input_schema(rw)
    _output_schema(rw)
    _sandbox(rw, ("sandbox",))
    trigger = rw.mapping(("trigger",))
    if trigger is None:
        return
    kind = trigger.get("kind")
    if isinstance(kind, str) and kind.lower() != TRIGGER.lower():
        close = " (did you mean 'OnConversationStart'?)" if suggest(kind, [TRIGGER]) else ""
        rw.warn(
            ("trigger", "kind"),
            f"trigger kind {kind!r}{close} is read as {TRIGGER!r}: the original framework "
            "starts its workflows whatever the trigger's kind, and raf starts one when it is "
            "run (`raf run`, `raf serve`, or `workflow.run(...)` in code); start it from what "
            f"would fire {kind!r} instead",
            key=False,
        )
        trigger["kind"] = TRIGGER
    _actions(rw, ("trigger", "actions"), in_loop=False)
    _goto_agents(rw)


def _actions(rw: Rewriter, path: KeyPath, *, in_loop: bool) -> None:
    items = rw.at(path)
    if not isinstance(items, list):
        return
    kept: list[tuple[KeyPath | None, Any]] = []
    for index in range(len(items)):
        where = (*path, index)
        kind = items[index].get("kind") if isinstance(items[index], dict) else None
        if not in_loop and kind in _LOOP_CONTROLS:
            rw.warn(
                where,
                f"{kind} outside a Foreach does nothing (the original framework ignores it "
                "there), so raf drops it; move it into a Foreach's actions",
                key=False,
            )
            continue
        _action(rw, where, in_loop=in_loop)
        kept.append((where, items[index]))
    if len(kept) < len(items):
        rw.replace_list(path, kept)


def _action(rw: Rewriter, path: KeyPath, *, in_loop: bool) -> None:
    action = rw.mapping(path)
    if action is None:
        return
    kind = str(action.get("kind", ""))
    in_loop = in_loop or kind in ("Foreach", "RepeatUntil")
    for old, new in _RENAMES.items():
        rw.rename(path, old, new)
    for owner, renames in _NESTED_RENAMES.items():
        if isinstance(action.get(owner), dict):
            for old, new in renames.items():
                rw.rename((*path, owner), old, new)
    if kind == "ExecuteCode":
        _execute_code(rw, path)
    elif kind == "HttpRequestAction":
        _http_request(rw, path)
    elif kind == "EditTableV2":
        _edit_table(rw, path)
    elif kind == "AddConversationMessage" and "conversationId" not in action:
        # the original adds the message to the run's own conversation
        action["conversationId"] = "=System.ConversationId"
    for key in _LISTS:
        if key in action:
            _actions(rw, (*path, key), in_loop=in_loop)
    conditions = action.get("conditions")
    if isinstance(conditions, list):
        for index in range(len(conditions)):
            _actions(rw, (*path, "conditions", index, "actions"), in_loop=in_loop)


def _walk(value: Any) -> list[dict[str, Any]]:
    """Every action under `value`, in document order."""
    found: list[dict[str, Any]] = []
    if isinstance(value, dict):
        if isinstance(value.get("kind"), str):
            found.append(value)
        for inner in value.values():
            found += _walk(inner)
    elif isinstance(value, list):
        for inner in value:
            found += _walk(inner)
    return found


def _goto_agents(rw: Rewriter) -> None:
    """A GotoAction may name an InvokeAgent by its agent's name (the original labels each
    InvokeAgent so, the last one of a name winning): it goes to that action's id."""
    actions = _walk(rw.at(("trigger", "actions")))
    ids = {a["id"] for a in actions if isinstance(a.get("id"), str)}
    by_agent: dict[str, dict[str, Any]] = {}
    for action in actions:
        agent = action.get("agent")
        name = agent.get("name") if isinstance(agent, dict) else None
        if action["kind"] == "InvokeAgent" and isinstance(name, str):
            by_agent[name] = action
    for action in actions:
        target = action.get("actionId")
        if action["kind"] != "GotoAction" or not isinstance(target, str) or target in ids:
            continue
        invoke = by_agent.get(target)
        if invoke is None:
            continue
        if not isinstance(invoke.get("id"), str):
            invoke["id"] = target
            ids.add(target)
        action["actionId"] = invoke["id"]


def _execute_code(rw: Rewriter, path: KeyPath) -> None:
    """The original's `output: {result, messages, auto_send}`: `result` keeps the run's
    record (stdout, stderr, exit code, ok), as raf's `result:` does; `messages` its printed
    text, as raf's `output:` does."""
    _sandbox(rw, (*path, "sandbox"))
    action = rw.mapping(path)
    output = rw.mapping((*path, "output"))
    if action is None or output is None:
        return  # raf's own `output: Local.x` (the printed text)
    del action["output"]
    if "result" in output:
        action["result"] = output["result"]
        rw.relocate((*path, "output", "result"), (*path, "result"))
    if "messages" in output:
        action["output"] = output["messages"]
    if output.get("autoSend"):
        rw.warn(
            (*path, "output", "autoSend"),
            "'auto_send' is not read: raf's ExecuteCode does not say what the code printed; "
            "keep it with output.messages and say it with a SendActivity",
        )


def _edit_table(rw: Rewriter, path: KeyPath) -> None:
    """The original's `operation: update` names no column to find the row by; raf's
    update needs one (`key`) or the row's `index`."""
    action = rw.mapping(path)
    assert action is not None
    operation = action.get("operation")
    if str(operation).lower() == "update" and not {"key", "index"} & set(action):
        rw.warn(
            (*path, "operation"),
            "update names no row to change: raf changes the row whose 'key' column matches "
            "the row's, or the row at 'index'; add key: <column> (for example key: id)",
            key=False,
        )


def _http_request(rw: Rewriter, path: KeyPath) -> None:
    """The original's body kinds (`{kind: json|raw|none, value}`) as raf's body, and its
    `query_parameters` written into the URL."""
    action = rw.mapping(path)
    assert action is not None
    body = action.get("body")
    kinds = ("json", "raw", "none")
    if (
        isinstance(body, dict)
        and str(body.get("kind", "")).lower() in kinds
        and set(body) <= {"kind", "value"}
    ):
        if str(body["kind"]).lower() == "none" or "value" not in body:
            del action["body"]
        else:
            rw.relocate((*path, "body", "value"), (*path, "body"))
            action["body"] = body["value"]
    rw.rename(path, "query_parameters", "queryParameters")
    params = action.get("queryParameters")
    if params is None:
        return
    url = action.get("url")
    literal = isinstance(params, dict) and all(
        isinstance(v, str | int | float | bool) and not str(v).startswith("=")
        for v in params.values()
    )
    if isinstance(url, str) and not url.startswith("=") and literal:
        assert isinstance(params, dict)
        query = urlencode({str(k): _query_value(v) for k, v in params.items()})
        action["url"] = f"{url}{'&' if '?' in url else '?'}{query}"
        del action["queryParameters"]
        return
    rw.drop(
        (*path, "queryParameters"),
        "is not read here: raf writes query parameters into the URL only when the URL and "
        "every value are written literally; build the URL with an expression instead "
        '(url: =$"https://host/path?q={Local.q}")',
    )


def _query_value(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _sandbox(rw: Rewriter, path: KeyPath) -> None:
    if rw.mapping(path) is None:
        return
    for old, new in _SANDBOX_SPELLINGS.items():
        rw.rename(path, old, new)
    for key in _SANDBOX_IGNORED:
        rw.drop(
            (*path, key),
            "is a setting of the original's docker, podman or wasm sandbox, which raf does "
            "not have: it is ignored (code runs in raf's sandbox; set its timeout, memory_mb, "
            "cpu_seconds here)",
        )


def _input_schema(rw: Rewriter) -> None:
    """`inputSchema` (a property list) as raf's `inputs:` (name to type, description and
    default)."""
    schema = rw.mapping(("inputSchema",))
    if schema is None:
        return
    data: dict[str, Any] = rw.doc.data
    if "inputs" in data:
        rw.drop(("inputSchema",), "is ignored: 'inputs' is set, and it wins")
        return
    properties = schema.get("properties")
    inputs: dict[str, Any] = {}
    items = properties if isinstance(properties, list) else []
    if isinstance(properties, dict):
        items = [{"name": k, **(v if isinstance(v, dict) else {})} for k, v in properties.items()]
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        kind = str(item.get("kind", item.get("type", "string"))).lower()
        spec: dict[str, Any] = {"type": _INPUT_KINDS.get(kind, kind)}
        for key in ("description", "default"):
            if key in item:
                spec[key] = item[key]
        inputs[item["name"]] = spec
        where = (
            "inputSchema",
            "properties",
            index if isinstance(properties, list) else item["name"],
        )
        rw.relocate(where, ("inputs", item["name"]))
        rw.relocate((*where, "kind"), ("inputs", item["name"], "type"))
    rw.relocate(("inputSchema",), ("inputs",), exact=True)
    del data["inputSchema"]
    data["inputs"] = inputs


def _output_schema(rw: Rewriter) -> None:
    rw.drop(
        ("outputSchema",),
        "is not checked for a workflow: raf does not hold a workflow's output to a schema; "
        "give the agent that answers an outputSchema, or check the value in an If action",
    )
