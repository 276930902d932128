"""The tools an OpenAI client sends (`tools` on chat completions and the Responses API),
as tools the agent's run hands back (`ClientTool`), and the calls of them a run ended
with. The agent runs its own tools; a call of a client's tool ends the turn for the
client to run, and the client continues with its result."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from raf.agent.agent import Agent
from raf.core.agent_like import AgentLike
from raf.core.client_tool import ClientTool
from raf.core.contents import FunctionCallContent, FunctionResultContent
from raf.core.errors import ToolDefinitionError
from raf.core.messages import ChatMessage, Role
from raf.core.options import ToolChoice
from raf.core.tools import check_tool_name
from raf.serve.errors import ServeError


def _invalid(param: str, message: str, code: str = "invalid_value") -> ServeError:
    error = ServeError(400, code, f"{param}: {message}")
    error.param = param
    return error


def client_tools(
    agent: AgentLike, given: list[dict[str, Any]] | None, *, nested: bool
) -> list[ClientTool]:
    """The function tools of a request (`nested`: chat completions' `{"type":
    "function", "function": {...}}`; else the Responses API's flat items); a 400 naming
    the tool that is not a function, has no valid name, or has the name of one of the
    agent's own tools."""
    if not given:
        return []
    if not isinstance(agent, Agent):
        raise _invalid(
            "tools",
            f"agent {agent.name!r} is not one agent on one model (an orchestration or a "
            "workflow served as an agent), so it cannot be offered the client's tools; "
            "leave 'tools' out",
        )
    own = {t.name for t in agent.tools}
    out: list[ClientTool] = []
    seen: set[str] = set()
    for index, item in enumerate(given):
        where = f"tools[{index}]"
        kind = item.get("type")
        if kind != "function":
            raise _invalid(
                f"{where}.type",
                f"{kind!r} tools are not served: only function tools, which the client runs",
            )
        spec = item.get("function") if nested else item
        prefix = f"{where}.function" if nested else where
        if not isinstance(spec, dict):
            raise _invalid(prefix, "must be an object with a name", "invalid_type")
        name = spec.get("name")
        if not isinstance(name, str):
            raise _invalid(f"{prefix}.name", "is missing", "missing_required_parameter")
        try:
            check_tool_name(name)
        except ToolDefinitionError as exc:
            raise _invalid(f"{prefix}.name", str(exc)) from None
        if name in own:
            raise _invalid(
                f"{prefix}.name",
                f"agent {agent.name!r} has a tool of its own named {name!r}; name the "
                "client's tool differently",
            )
        if name in seen:
            raise _invalid(f"{prefix}.name", f"{name!r} is given twice")
        seen.add(name)
        parameters = spec.get("parameters")
        if parameters is None:
            parameters = {"type": "object", "properties": {}}
        if not isinstance(parameters, dict):
            raise _invalid(f"{prefix}.parameters", "must be a JSON Schema object", "invalid_type")
        description = spec.get("description")
        out.append(
            ClientTool(
                name=name,
                description=description if isinstance(description, str) else "",
                parameters=parameters,
            )
        )
    return out


def tool_choice(given: Any, param: str, *, nested: bool) -> ToolChoice | None:
    """A request's `tool_choice` as the run's: `auto`, `none`, `required` or the name of
    the one function to call; a 400 naming the field otherwise."""
    if given is None:
        return None
    if given in ("auto", "none", "required"):
        return str(given)
    if isinstance(given, dict) and given.get("type") == "function":
        spec = given.get("function") if nested else given
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            return str(spec["name"])
    raise _invalid(param, "must be auto, none, required or a function to call by name")


def call_arguments(raw: Any, param: str) -> dict[str, Any]:
    """A call's `arguments` (a JSON object written as a string) as a dict."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise _invalid(param, "must be a JSON object written as a string", "invalid_type")
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise _invalid(param, f"is not valid JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise _invalid(param, "must be a JSON object")
    return value


def result_message(call_id: str, output: Any, names: dict[str, str]) -> ChatMessage:
    """A client's tool result as the run's tool message (the tool's name looked up in
    `names`, the calls sent so far by id)."""
    if not isinstance(output, str):
        output = json.dumps(output, ensure_ascii=False)
    result = FunctionResultContent(call_id=call_id, name=names.get(call_id), result=output)
    return ChatMessage(role=Role.TOOL, contents=[result])


def handed_back(messages: Iterable[ChatMessage], names: set[str]) -> list[FunctionCallContent]:
    """The calls of the client's tools (`names`) a run ended with, in order."""
    return [
        c
        for m in messages
        for c in m.contents
        if isinstance(c, FunctionCallContent) and c.name in names
    ]


def arguments_json(call: FunctionCallContent) -> str:
    """A call's arguments as OpenAI's APIs write them: a JSON object as a string."""
    return call.raw_arguments or json.dumps(call.arguments, ensure_ascii=False)
