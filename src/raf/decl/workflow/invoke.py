"""The actions that reach outside the workflow: agents, function tools (with approval),
code in the sandbox, MCP tools and HTTP requests."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from raf.core import outbound
from raf.core.contents import ApprovalRequestContent, ApprovalResponseContent
from raf.core.errors import MissingExtraError
from raf.core.messages import ChatMessage, Role, new_id
from raf.core.options import AgentRunOptions
from raf.core.responses import AgentResponse
from raf.core.sessions import AgentSession
from raf.core.tools import ToolContext
from raf.decl.powerfx.values import message_record, text, truthy
from raf.decl.workflow.program import Step
from raf.decl.workflow.runtime import HttpReply, HttpRequest, HttpRequestHandler, Runtime

_ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT, "system": Role.SYSTEM}


async def _name(rt: Runtime, raw: Any) -> str:
    if isinstance(raw, Mapping):
        raw = raw.get("name", "")
    return text(await rt.value(raw))


def _outputs(step: Step) -> dict[str, Any]:
    output = step.fields.get("output")
    return dict(output) if isinstance(output, Mapping) else {}


def _parsed(reply: str) -> Any:
    """A reply as JSON where it is JSON (inside a ``` fence too, as models often write
    it), else the text itself."""
    body = reply.strip()
    if body.startswith("```") and body.endswith("```") and "\n" in body:
        body = body[body.index("\n") + 1 : -3].strip()
    try:
        return json.loads(body)
    except ValueError:
        return reply


async def invoke_agent(rt: Runtime, step: Step) -> Any:
    """Run an agent on the conversation (or on its input alone) and keep its answer; tool
    calls it waits on become requests for approval."""
    fields = step.fields
    name = await _name(rt, fields["agent"])
    agent = rt.services.agents.get(name)
    if agent is None:
        known = ", ".join(sorted(rt.services.agents)) or "none"
        raise rt.fail(f"no agent {name!r} (agents: {known})")
    given = fields.get("input", fields.get("message"))
    arguments: Any = None
    if isinstance(given, Mapping):
        if given.get("arguments") is not None:
            arguments = await rt.value(given["arguments"])
        given = given.get("messages", given.get("text"))
    said = await rt.render(given) if given is not None else None
    uses_conversation = "conversationId" in fields or said is None
    history = await rt.conversation(fields.get("conversationId")) if uses_conversation else []
    if said is not None:
        history.append({"role": "user", "text": said})
        rt.vars.set_system("LastMessage", {"Text": said, "Role": "user"})
    if uses_conversation:
        messages = [_message(m) for m in history]
    else:
        messages = [ChatMessage.user(said or "")]
    options = _arguments(agent, arguments, messages)
    session = agent.create_session()
    response = await agent.run(messages, session, options)
    return await _agent_answered(rt, step, name, session, response, uses_conversation)


def _arguments(agent: Any, arguments: Any, messages: list[ChatMessage]) -> Any:
    """`input.arguments` reach the agent: they fill its instructions template, or, for
    an agent without one, are given to it as a message that lists them."""
    if not arguments:
        return None
    if not isinstance(arguments, Mapping):
        arguments = {"arguments": arguments}
    if getattr(agent, "instructions_template", None) is not None:
        return AgentRunOptions(template_variables=dict(arguments))
    listed = "\n".join(f"{key}: {text(value)}" for key, value in arguments.items())
    messages.append(ChatMessage.user(listed))
    return None


async def _agent_answered(
    rt: Runtime,
    step: Step,
    name: str,
    session: AgentSession,
    response: AgentResponse,
    uses_conversation: bool,
) -> Any:
    """Keep the agent's answer, or ask about the tool calls it waits on, one by one."""
    pending = response.pending_approvals
    if pending:
        asked = [
            {"call_id": p.call_id, "name": p.name, "arguments": dict(p.arguments)} for p in pending
        ]
        then = {
            "agent": name,
            "session": session.to_dict(),
            "asked": asked,
            "answers": {},
            "conversation": uses_conversation,
        }
        return await rt.ask(_approval(name, asked[0]), bool, then)
    reply = response.text
    rt.vars.set_agent(
        {
            "name": name,
            "text": reply,
            "response": reply,
            "messages": [message_record("assistant", reply)],
        }
    )
    if uses_conversation:
        conversation = await rt.conversation(step.fields.get("conversationId"))
        conversation.append({"role": "assistant", "text": reply})
    outputs = _outputs(step)
    if "messages" in outputs:
        rt.set(outputs["messages"], [message_record("assistant", reply)])
    if "result" in outputs:
        rt.set(outputs["result"], reply)
    if "response" in outputs:  # MAF's name for the answer's text
        rt.set(outputs["response"], reply)
    if "property" in outputs:  # the Python engine's name for the answer's text
        rt.set(outputs["property"], reply)
    if "responseObject" in outputs:
        rt.set(outputs["responseObject"], _parsed(reply))
    if outputs.get("autoSend", "output" not in step.fields):
        await rt.ctx.yield_output(reply)
    when = _external_loop(step)
    if when is not None and truthy(await rt.value(when)):
        then = {"agent": name, "external": True, "conversation": uses_conversation}
        if not uses_conversation:
            then["session"] = session.to_dict()
        return await rt.ask(reply, str, then)
    return None


def _external_loop(step: Step) -> Any:
    """`input.externalLoop.when`: while it holds after an answer, the user is asked
    and the agent answers again."""
    given = step.fields.get("input")
    loop = given.get("externalLoop") if isinstance(given, Mapping) else None
    return loop.get("when") if isinstance(loop, Mapping) else None


async def _next_turn(rt: Runtime, step: Step, then: dict[str, Any], said: str) -> Any:
    agent = rt.services.agents[then["agent"]]
    rt.vars.set_system("LastMessage", {"Text": said, "Role": "user"})
    if then["conversation"]:
        history = await rt.conversation(step.fields.get("conversationId"))
        history.append({"role": "user", "text": said})
        session = agent.create_session()
        response = await agent.run([_message(m) for m in history], session)
    else:
        session = AgentSession.from_dict(then["session"])
        response = await agent.run([ChatMessage.user(said)], session)
    return await _agent_answered(rt, step, then["agent"], session, response, then["conversation"])


def _approval(agent: str, call: Mapping[str, Any]) -> ApprovalRequestContent:
    return ApprovalRequestContent(
        call_id=call["call_id"],
        name=call["name"],
        arguments=call["arguments"],
        reason=f"agent {agent} wants to call {call['name']}",
    )


async def resume_agent(rt: Runtime, step: Step, then: dict[str, Any], answer: Any) -> Any:
    """Record a decision on one of the agent's tool calls; once all are decided, the
    agent goes on with them. In an external loop, the answer is the user's next message."""
    if then.get("external"):
        return await _next_turn(rt, step, then, text(answer))
    asked = then["asked"]
    answers = then["answers"]
    answers[asked[len(answers)]["call_id"]] = answer is True
    if len(answers) < len(asked):
        return await rt.ask(_approval(then["agent"], asked[len(answers)]), bool, then)
    agent = rt.services.agents[then["agent"]]
    session = AgentSession.from_dict(then["session"])
    decisions = [ApprovalResponseContent(call_id=k, approved=v) for k, v in answers.items()]
    options = AgentRunOptions(tool_approval_responses=decisions)
    response = await agent.run([], session, options)
    return await _agent_answered(rt, step, then["agent"], session, response, then["conversation"])


def _message(record: Mapping[str, Any]) -> ChatMessage:
    role = _ROLES.get(str(record.get("role", record.get("Role"))).lower(), Role.USER)
    said = text(record.get("text", record.get("Text")))
    if role is Role.ASSISTANT:
        return ChatMessage.assistant(said)
    if role is Role.SYSTEM:
        return ChatMessage.system(said)
    return ChatMessage.user(said)


async def invoke_function_tool(rt: Runtime, step: Step) -> Any:
    """Call a registered function tool; with approval required, ask first."""
    name = await _name(rt, step.fields["functionName"])
    tool = rt.services.tools.get(name)
    if tool is None:
        known = ", ".join(sorted(rt.services.tools)) or "none"
        raise rt.fail(f"no function tool {name!r} (tools: {known})")
    arguments = await rt.value(step.fields.get("arguments") or {})
    if not isinstance(arguments, dict):
        raise rt.fail("arguments must be a record of named values")
    required = step.fields.get("requireApproval", step.fields.get("require_approval"))
    needs = bool(required) if required is not None else tool.approval_required(arguments)
    if needs:
        call_id = new_id("call")
        request = ApprovalRequestContent(
            call_id=call_id,
            name=name,
            arguments=arguments,
            reason=f"the workflow wants to call {name}",
        )
        return await rt.ask(request, bool, {"arguments": arguments, "call_id": call_id})
    await _call_tool(rt, step, tool, arguments, new_id("call"))
    return None


async def resume_function_tool(rt: Runtime, step: Step, then: dict[str, Any], answer: Any) -> None:
    name = await _name(rt, step.fields["functionName"])
    outputs = _outputs(step)
    if answer is not True:
        rt.vars.set_system("LastApproval", {"Function": name, "Approved": False})
        if "result" in outputs:
            rt.set(outputs["result"], None)
        return
    rt.vars.set_system("LastApproval", {"Function": name, "Approved": True})
    tool = rt.services.tools[name]
    await _call_tool(rt, step, tool, then["arguments"], then["call_id"])


async def _call_tool(
    rt: Runtime, step: Step, tool: Any, arguments: dict[str, Any], call_id: str
) -> None:
    result = await tool.invoke(arguments, ToolContext(call_id=call_id))
    if result.is_error:
        raise rt.fail(f"function {tool.name!r} failed: {result.error}")
    outputs = _outputs(step)
    if "result" in outputs:
        rt.set(outputs["result"], result.value)
    if "messages" in outputs:
        rt.set(outputs["messages"], text(result.value))
    if outputs.get("autoSend"):
        await rt.say(text(result.value))


_SANDBOX_KEYS = {
    "timeout": "timeout_s",
    "cpu_seconds": "cpu_s",
    "cpuSeconds": "cpu_s",
    "memory_mb": "memory_mb",
    "memoryMb": "memory_mb",
    "file_mb": "file_mb",
    "fileMb": "file_mb",
    "max_processes": "max_processes",
    "maxProcesses": "max_processes",
    "output_cap": "output_cap",
    "outputCap": "output_cap",
    "network": "network",
}


def sandbox_settings(raw: Any) -> dict[str, Any]:
    """The `CodeInterpreter` settings of a `sandbox:` (the original framework's, on an
    ExecuteCode action or at the top of a workflow document): `true`, or the sandbox's
    limits. Code always runs in raf's sandbox, so `false` is refused (`ValueError`, as is
    an unknown setting)."""
    if raw is None or raw is True:
        return {}
    if raw is False:
        raise ValueError("sandbox: false is not possible: raf runs code only in its sandbox")
    if not isinstance(raw, Mapping):
        raise ValueError("sandbox is true or a mapping of limits (timeout, memory_mb, …)")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key in ("kind", "backend", "type"):
            continue
        name = _SANDBOX_KEYS.get(str(key))
        if name is None:
            known = ", ".join(sorted(k for k in _SANDBOX_KEYS if "_" in k or k == "timeout"))
            raise ValueError(f"sandbox has no setting {key!r} (settings: {known})")
        if name == "network":
            if not isinstance(value, bool):
                raise ValueError(f"sandbox network is true or false, not {value!r}")
            out[name] = value
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ValueError(f"sandbox {key} is a number above 0, not {value!r}")
        out[name] = float(value) if name == "timeout_s" else int(value)
    return out


def _sandbox(rt: Runtime, raw: Any) -> dict[str, Any]:
    try:
        return sandbox_settings(raw)
    except ValueError as exc:
        raise rt.fail(str(exc)) from None


async def execute_code(rt: Runtime, step: Step) -> None:
    """Run code in raf's code sandbox: no network, limited CPU, memory and time."""
    from raf.tools.code import CodeInterpreter

    fields = step.fields
    code = text(await rt.value(fields["code"]))
    language = text(await rt.value(fields.get("language", "python"))).lower()
    if language not in ("python", "shell"):
        raise rt.fail(f"ExecuteCode runs python or shell, not {language!r}")
    interpreter = rt.services.code
    sandbox = _sandbox(rt, fields.get("sandbox"))
    if interpreter is None or "timeout" in fields or sandbox:
        # the action's own settings over the document's `sandbox:`
        settings = {"timeout_s": 30.0, **rt.services.sandbox, **sandbox}
        if "timeout" in fields:
            settings["timeout_s"] = float(fields["timeout"])
        interpreter = CodeInterpreter(**settings)
    result = await interpreter.run(code, language=language)
    record = {
        "stdout": result.stdout,
        "stderr": result.stderr,
        "exitCode": result.exit_code,
        "ok": result.ok,
        "timedOut": result.timed_out,
    }
    if "result" in fields:
        rt.set(fields["result"], record)
    elif not result.ok:
        why = "timed out" if result.timed_out else f"exited with {result.exit_code}"
        raise rt.fail(f"the code {why}: {result.stderr.strip()[-300:]}")
    if "output" in fields:
        rt.set(fields["output"], result.stdout.rstrip("\n"))


async def invoke_mcp_tool(rt: Runtime, step: Step) -> Any:
    """Call a tool of an MCP server registered by name (`server` or `serverLabel`) or
    reached at `serverUrl`; with `requireApproval` true, ask first; with a
    `conversationId`, the tool's answer joins that conversation."""
    fields = step.fields
    tool_name = text(await rt.value(fields["toolName"]))
    arguments = await rt.value(fields.get("arguments") or {})
    if not isinstance(arguments, dict):
        raise rt.fail("arguments must be a record of named values")
    required = fields.get("requireApproval")
    if required is not None and truthy(await rt.value(required)):
        call_id = new_id("call")
        request = ApprovalRequestContent(
            call_id=call_id,
            name=tool_name,
            arguments=arguments,
            reason=f"the workflow wants to call the MCP tool {tool_name}",
        )
        return await rt.ask(request, bool, {"arguments": arguments, "tool": tool_name})
    await _call_mcp_tool(rt, step, tool_name, arguments)
    return None


async def resume_mcp_tool(rt: Runtime, step: Step, then: dict[str, Any], answer: Any) -> None:
    rt.vars.set_system("LastApproval", {"Function": then["tool"], "Approved": answer is True})
    if answer is not True:
        outputs = _outputs(step)
        if "result" in outputs:
            rt.set(outputs["result"], None)
        return
    await _call_mcp_tool(rt, step, then["tool"], then["arguments"])


async def _mcp_server(rt: Runtime, step: Step) -> Any:
    fields = step.fields
    server_name = await _name(rt, fields.get("server", fields.get("serverLabel", "")))
    server = rt.services.mcp_servers.get(server_name) if server_name else None
    if server is None and "serverUrl" in fields:
        from raf.tools.mcp.client import McpClient

        url = text(await rt.value(fields["serverUrl"]))
        config: dict[str, Any] = {"name": server_name or "workflow", "url": url}
        headers = await rt.value(fields.get("headers") or {})
        if headers:
            config["headers"] = {str(k): text(v) for k, v in dict(headers).items()}
        server = McpClient(config)
        rt.services.mcp_servers[server_name or url] = server
    if server is None:
        known = ", ".join(sorted(rt.services.mcp_servers)) or "none"
        raise rt.fail(f"no MCP server {server_name!r} (servers: {known})")
    return server


async def _call_mcp_tool(rt: Runtime, step: Step, tool_name: str, arguments: Any) -> None:
    server = await _mcp_server(rt, step)
    result = await server.call_tool(tool_name, arguments)
    pieces = [getattr(c, "text", "") for c in getattr(result, "content", []) or []]
    body = "\n".join(p for p in pieces if p)
    if getattr(result, "isError", False):
        raise rt.fail(f"MCP tool {tool_name!r} failed: {body}")
    structured = getattr(result, "structuredContent", None)
    if "conversationId" in step.fields:
        (await rt.conversation(step.fields["conversationId"])).append(
            {"role": "tool", "text": f"{tool_name} returned: {body}"}
        )
    outputs = _outputs(step)
    if "result" in outputs:
        rt.set(outputs["result"], structured if structured is not None else _parsed(body))
    if "messages" in outputs:
        rt.set(outputs["messages"], [message_record("assistant", body)])
    if outputs.get("autoSend"):
        await rt.say(body)


_MAX_REPLY_BYTES = 5_000_000


async def http_request(rt: Runtime, step: Step) -> None:
    """An HTTP request (http or https only) through raf's outbound guard; the body is
    parsed when it is JSON. A URL written literally in the document is the user's and is
    trusted (a loopback service included); a computed one (`=expr`, which may come from
    the conversation) and every redirect reach only public addresses, or the hosts in
    `Services.http_allow_hosts`. A host's `Services.http_handler`, when set, sends the
    request instead (the guard is then the handler's)."""
    fields = step.fields
    method = text(await rt.value(fields.get("method", "GET"))).upper()
    raw_url = fields["url"]
    url = text(await rt.value(raw_url))
    literal = isinstance(raw_url, str) and not raw_url.startswith("=")
    if not url.startswith(("http://", "https://")):
        raise rt.fail(f"HttpRequestAction fetches http or https URLs, not {url[:80]!r}")
    headers = {str(k): text(v) for k, v in (await rt.value(fields.get("headers") or {})).items()}
    body = await rt.value(fields.get("body"))
    data: bytes | None = None
    if body is not None:
        if isinstance(body, dict | list):
            data = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        else:
            data = text(body).encode()
    timeout = float(fields.get("timeout", rt.services.http_timeout))
    request = HttpRequest(method=method, url=url, headers=headers, body=data, timeout=timeout)
    handler = rt.services.http_handler
    if handler is not None:
        status, reply_headers, raw = await _handled(rt, handler, request)
    else:
        status, reply_headers, raw = await _fetched(rt, request, literal=literal)
    content = raw.decode("utf-8", errors="replace")
    if status >= 400:
        raise rt.fail(f"{method} {url} answered {status}: {content[:200]}")
    value = _parsed(content) if content else None
    if "response" in fields:
        rt.set(fields["response"], value)
    if "responseHeaders" in fields:
        rt.set(fields["responseHeaders"], reply_headers)
    if "conversationId" in fields:
        (await rt.conversation(fields["conversationId"])).append({"role": "user", "text": content})


async def _handled(
    rt: Runtime, handler: HttpRequestHandler, request: HttpRequest
) -> tuple[int, dict[str, str], bytes]:
    """The host's handler sends the request; its reply is checked and capped like a
    fetched one."""
    method, url = request.method, request.url
    try:
        reply = await handler(request)
    except Exception as exc:  # the host's client failed: the action fails, located
        raise rt.fail(f"{method} {url} failed in the HTTP handler: {exc}") from None
    if not isinstance(reply, HttpReply):
        raise rt.fail(
            f"the HTTP handler answered {type(reply).__name__}, not an HttpReply "
            "(status, headers, body)"
        )
    raw = reply.body.encode() if isinstance(reply.body, str) else bytes(reply.body)
    return reply.status, {str(k): str(v) for k, v in reply.headers.items()}, raw[:_MAX_REPLY_BYTES]


async def _fetched(
    rt: Runtime, request: HttpRequest, *, literal: bool
) -> tuple[int, dict[str, str], bytes]:
    """raf's own fetch, through the outbound guard."""
    method, url, timeout = request.method, request.url, request.timeout
    try:
        import httpx
    except ImportError as exc:
        raise MissingExtraError("HttpRequestAction", "web", "httpx") from exc
    rule = outbound.policy(
        who="HttpRequestAction",
        allow_hosts=rt.services.http_allow_hosts,
        trusted=[url] if literal else [],
    )
    try:
        async with (
            outbound.guarded_async_client(rule, timeout=timeout, follow_redirects=True) as client,
            client.stream(
                method, url, content=request.body, headers=dict(request.headers)
            ) as reply,
        ):
            raw = b""
            async for chunk in reply.aiter_bytes():
                raw += chunk
                if len(raw) >= _MAX_REPLY_BYTES:
                    raw = raw[:_MAX_REPLY_BYTES]
                    break
            status = reply.status_code
            reply_headers = {  # as the server wrote them (httpx's own view is lowercase)
                k.decode("latin-1"): v.decode("latin-1") for k, v in reply.headers.raw
            }
    except httpx.HTTPError as exc:
        raise rt.fail(f"{method} {url} failed: {exc}") from None
    return status, reply_headers, raw
