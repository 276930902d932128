"""Runs a compiled action list: the program counter, loops with caps, jumps, pauses for
input, and the helpers actions use (values, text templates, conversations, outputs).

Everything a run needs to continue is plain JSON in `Interpreter.state`, so a node
checkpoints it after each superstep and resumes it, in this process or another.

A run is bounded by its `Limits` (instructions, wall time, items per Foreach), and it
lets the event loop serve other runs and requests at least every `YIELD_SECONDS`, so one
looping workflow cannot hold a server."""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from raf.core.errors import RafError
from raf.core.messages import new_id
from raf.decl.powerfx.evaluation import ON_THREAD, evaluate_here, on_thread
from raf.decl.powerfx.expressions import Expression, ExpressionError
from raf.decl.powerfx.values import text, truthy, type_word
from raf.decl.powerfx.variables import VariableError, Variables, is_scope
from raf.decl.workflow.program import (
    Instr,
    Program,
    Step,
    show_path,
    unquoted_template,
)
from raf.workflow.context import WorkflowContext


class ActionError(RafError):
    """An action failed while the workflow ran: names the action and where it is."""

    def __init__(self, step: Step | None, message: str) -> None:
        self.step = step
        shown = show_path(step.path) if step else ""
        if step is not None and step.where:
            shown = f"{step.where} ({shown})"
        where = f"action {step.id!r} ({step.kind}) at {shown}: " if step else ""
        super().__init__(f"{where}{message}")


class McpServerLike(Protocol):
    """What InvokeMcpTool needs of an MCP server: call a tool by name."""

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any: ...


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One request an HttpRequestAction makes, as a host's `HttpRequestHandler` gets it:
    the method in capitals, the URL after its expression ran, the headers as written (a
    JSON body adds `Content-Type: application/json`), the body as bytes (None when the
    action has none) and the timeout in seconds."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None
    timeout: float


@dataclass(frozen=True, slots=True)
class HttpReply:
    """What an `HttpRequestHandler` answers: the status code, the reply's headers and its
    body (bytes or text; JSON is parsed as the server's reply would be)."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | str = b""


HttpRequestHandler = Callable[[HttpRequest], Awaitable[HttpReply]]
"""Sends an HttpRequestAction's request in the host's own way (its HTTP client, its
credentials, a test's peer). When set, HttpRequestAction calls it instead of fetching
the URL itself, so raf's outbound guard does not apply: the handler decides what it
reaches."""


@dataclass(kw_only=True, slots=True)
class Services:
    """What actions may reach: agents, function tools, MCP servers, the code sandbox."""

    agents: dict[str, Any] = field(default_factory=dict)
    tools: dict[str, Any] = field(default_factory=dict)
    mcp_servers: dict[str, McpServerLike] = field(default_factory=dict)
    code: Any = None
    """A `CodeInterpreter`; made on first use when None."""
    sandbox: dict[str, Any] = field(default_factory=dict)
    """The document's `sandbox:` settings, for a `CodeInterpreter` ExecuteCode makes."""
    http_timeout: float = 30.0
    http_allow_hosts: tuple[str, ...] = ()
    """Hosts an HttpRequestAction may reach at any address (loopback, private) even when
    its URL is computed; a URL written literally in the document is trusted anyway."""
    http_handler: HttpRequestHandler | None = None
    """Sends HttpRequestAction's requests instead of raf's own guarded client."""


@dataclass(kw_only=True, slots=True)
class Limits:
    """Caps that keep a declarative workflow from running forever."""

    max_steps: int = 10_000
    """Instructions one run may execute."""
    max_loop_items: int = 1_000
    """Items one Foreach may visit."""
    max_seconds: float = 300.0
    """Wall-clock seconds one run may spend executing: counted from its start, and from
    each answer that resumes it, until it ends or pauses, in whichever process runs it;
    the time it waits paused for input does not count. Waiting for an agent, a tool or
    a request does count, and a run whose time is spent while it waits is stopped."""

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_loop_items"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Limits.{name} must be a whole number above 0, got {value!r}")
        seconds = self.max_seconds
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
            raise ValueError(f"Limits.max_seconds must be a number above 0, got {seconds!r}")


YIELD_SECONDS = 0.005
"""Longest stretch a run executes instructions without letting the event loop serve
others (checked between instructions; an action that awaits lets it serve anyway)."""


PAUSE = object()
"""Returned by an action that asked for input: the run waits for the answer."""

Action = Callable[["Runtime", Step], Awaitable[Any]]
Resume = Callable[["Runtime", Step, dict[str, Any], Any], Awaitable[Any]]
"""Takes an answer; returns `PAUSE` when the step asks again."""


class Runtime:
    """What an action gets: the variables, the node's context and the services."""

    def __init__(
        self, interpreter: Interpreter, ctx: WorkflowContext[Any], step: Step | None = None
    ) -> None:
        self.interpreter = interpreter
        self.ctx = ctx
        self.step = step
        self.vars = interpreter.vars
        self.services = interpreter.services

    def fail(self, message: str) -> ActionError:
        return ActionError(self.step, message)

    async def expression(self, source: str) -> Any:
        """The value of a formula, evaluated on the event loop or, when it may take
        long, on a worker thread (`raf.decl.powerfx.evaluation`)."""
        compiled = self.interpreter.program.expressions.get(source)
        try:
            if compiled is None:
                compiled = Expression.compile(source)
            value = evaluate_here(compiled, self.read, self.assign, self.peek)
            if value is ON_THREAD:
                value = await on_thread(compiled, self.read, self.assign)
            return value
        except (ExpressionError, VariableError) as exc:
            raise self.fail(f"the expression failed: {exc}") from None

    def _path(self, parts: tuple[str, ...]) -> tuple[str, ...]:
        """A bare loop item or index (`item`) is the `Local.` variable of that name."""
        bare = self.step.bare if self.step is not None else frozenset()
        if parts and parts[0] in bare and not is_scope(parts[0]):
            return ("Local", *parts)
        return parts

    def read(self, parts: tuple[str, ...]) -> Any:
        """A variable an expression reads (a copy)."""
        return self.vars.get(self._path(parts))

    def peek(self, parts: tuple[str, ...]) -> Any:
        """A variable as it is held, to estimate a formula's work before it runs."""
        return self.vars.peek(self._path(parts))

    async def value(self, raw: Any) -> Any:
        """A field's value: `=expr` evaluated, records and lists evaluated inside."""
        if isinstance(raw, str):
            return await self.expression(raw[1:]) if raw.startswith("=") else raw
        if isinstance(raw, Mapping):
            return {str(k): await self.value(v) for k, v in raw.items()}
        if isinstance(raw, list):
            return [await self.value(v) for v in raw]
        return raw

    async def render(self, raw: Any) -> str:
        """A text field: `=expr` as text, else `{expr}` parts filled in; `{text: ...}`
        records are read for their text."""
        raw = unquoted_template(raw)
        if isinstance(raw, Mapping):
            raw = raw.get("text", "")
        if isinstance(raw, list):
            return "\n".join([await self.render(r) for r in raw])
        if not isinstance(raw, str):
            return text(raw)
        if raw.startswith("="):
            return text(await self.expression(raw[1:]))
        parts = self.interpreter.program.templates.get(raw)
        out = raw
        for whole, inner in parts or []:
            out = out.replace(whole, text(await self.expression(inner)))
        return out

    def assign(self, parts: tuple[str, ...], value: Any) -> None:
        """Write a variable from inside an expression (Patch on a table it holds)."""
        self.set(".".join(parts), value)

    def set(self, path: Any, value: Any) -> None:
        from raf.decl.workflow.program import local_path

        try:
            self.vars.set(local_path(str(path)), value)
        except VariableError as exc:
            raise self.fail(str(exc)) from None

    # -- conversations -----------------------------------------------------------------

    async def conversation(self, conversation_id: Any = None) -> list[dict[str, Any]]:
        """The messages of a conversation (the run's own when no id is given)."""
        key = text(await self.value(conversation_id)) if conversation_id else ""
        key = key or self.interpreter.state["conversation"]
        conversations = self.interpreter.state["conversations"]
        if key not in conversations:
            raise self.fail(f"no conversation {key!r}: make it with CreateConversation first")
        messages: list[dict[str, Any]] = conversations[key]
        return messages

    def new_conversation(self) -> str:
        conversation_id = new_id("conv")
        self.interpreter.state["conversations"][conversation_id] = []
        return conversation_id

    async def say(self, reply: str, conversation_id: Any = None) -> None:
        """Send text to the user (an output of the run) and keep it in the conversation."""
        (await self.conversation(conversation_id)).append({"role": "assistant", "text": reply})
        await self.ctx.yield_output(reply)

    async def ask(self, data: Any, response_type: type[Any], then: dict[str, Any]) -> Any:
        """Ask for input; the run pauses until it is answered, then the step's resume
        function gets `then` and the answer."""
        request_id = await self.ctx.request_input(data, response_type)
        self.interpreter.state["waiting"] = {"request": request_id, "then": then}
        return PAUSE


class Interpreter:
    """Executes a program; `state` (JSON) is all it needs to continue."""

    def __init__(
        self,
        program: Program,
        *,
        actions: Mapping[str, Action],
        resumers: Mapping[str, Resume],
        services: Services | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.program = program
        self.actions = actions
        self.resumers = resumers
        self.services = services or Services()
        self.limits = limits or Limits()
        self.state: dict[str, Any] = {}
        self.vars = Variables()
        self.reset()

    def reset(self) -> None:
        conversation = new_id("conv")
        self.state = {
            "pc": 0,
            "steps": 0,
            "seconds": 0.0,
            "loops": {},
            "gotos": {},
            "waiting": None,
            "done": False,
            "conversation": conversation,
            "conversations": {conversation: []},
            "variables": {},
        }
        self.vars = Variables(self.state["variables"])
        self.vars.set_system("ConversationId", conversation)

    def snapshot(self) -> dict[str, Any]:
        return copy.deepcopy(self.state)

    def restore(self, state: Mapping[str, Any] | None) -> None:
        if not state:
            self.reset()
            return
        self.state = copy.deepcopy(dict(state))
        self.vars = Variables(self.state["variables"])

    def start(self, inputs: Mapping[str, Any], messages: list[dict[str, Any]]) -> None:
        """Begin a run with its inputs and the messages that started it."""
        self.reset()
        self.state["variables"]["Workflow"]["Inputs"] = copy.deepcopy(dict(inputs))
        self.state["conversations"][self.state["conversation"]].extend(messages)
        last = messages[-1] if messages else {"role": "user", "text": ""}
        self.vars.set_system("LastMessage", {"Text": last["text"], "Role": last["role"]})
        self.vars.set_system("LastMessageText", last["text"])
        self.vars.set_system("UserInput", last["text"])
        self.vars.set_system("Timestamp", datetime.now(UTC).isoformat(timespec="seconds"))

    async def run(self, ctx: WorkflowContext[Any]) -> None:
        """Execute from the program counter to the end, an EndWorkflow, or a pause,
        within the run's limits."""
        await self._budgeted(lambda deadline: self._execute(ctx, deadline))

    async def _budgeted(self, work: Callable[[float], Awaitable[None]]) -> None:
        """Do `work` (given its deadline on `time.monotonic`) within what is left of the
        run's `max_seconds`, adding the time it took to the run's account; the time a
        paused run waits for its answer is between two such calls, so it is not
        counted. Once the time is spent, whatever the run awaits is cancelled and the
        run fails naming the action it was at."""
        state = self.state
        spent = float(state.get("seconds", 0.0))
        started = time.monotonic()
        left = self.limits.max_seconds - spent
        timeout = asyncio.timeout(max(left, 0.0))
        try:
            async with timeout:
                await work(started + left)
        except TimeoutError:
            if not timeout.expired():
                raise  # a timeout of the action's own (an HTTP request's, say)
            raise self._out_of_time() from None
        finally:
            state["seconds"] = spent + (time.monotonic() - started)

    def _step_at(self, pc: int) -> Step | None:
        """The action an instruction belongs to, for errors: a jump the compiler made
        (closing a loop, say) names the action it jumps to, else the one before it."""
        instrs = self.program.instrs
        if not 0 <= pc < len(instrs):
            return None
        instr = instrs[pc]
        if instr.step is None and 0 <= instr.target < len(instrs):
            instr = instrs[instr.target]
        if instr.step is not None:
            return instr.step
        return next((i.step for i in reversed(instrs[:pc]) if i.step is not None), None)

    def _out_of_time(self) -> ActionError:
        return ActionError(
            self._step_at(self.state["pc"]),
            f"the workflow ran for more than {self.limits.max_seconds:g} seconds, its time "
            "limit (Limits.max_seconds; maxSeconds in a workflow document): a loop may not "
            "end; raise the limit if the run is meant to take longer",
        )

    async def _execute(self, ctx: WorkflowContext[Any], deadline: float) -> None:
        instrs = self.program.instrs
        state = self.state
        yielded = time.monotonic()
        while not state["done"] and state["pc"] < len(instrs):
            instr = instrs[state["pc"]]
            state["steps"] += 1
            if state["steps"] > self.limits.max_steps:
                raise ActionError(
                    self._step_at(state["pc"]),
                    f"the workflow ran more than {self.limits.max_steps} actions, its action "
                    "limit (Limits.max_steps; maxTurns in a workflow document): a GotoAction "
                    "or loop may not end; raise the limit if the run is meant to be longer",
                )
            now = time.monotonic()
            if now >= deadline:
                raise self._out_of_time()
            if now - yielded >= YIELD_SECONDS:
                await asyncio.sleep(0)  # the event loop serves other runs and requests
                yielded = time.monotonic()
            if instr.op == "do":
                assert instr.step is not None
                outcome = await self.actions[instr.step.kind](
                    Runtime(self, ctx, instr.step), instr.step
                )
                if outcome is PAUSE:
                    state["waiting"]["pc"] = state["pc"]
                    return
                state["pc"] += 1
            elif instr.op == "branch":  # here, not in control(): a call less per condition
                holds = truthy(await Runtime(self, ctx, instr.step).expression(instr.expr))
                state["pc"] = state["pc"] + 1 if holds else instr.target
            else:
                await self.control(instr, ctx)
        state["done"] = True

    async def control(self, instr: Instr, ctx: WorkflowContext[Any]) -> None:
        """Execute a control instruction other than a branch (which `_execute` does)."""
        state = self.state
        rt = Runtime(self, ctx, instr.step)
        if instr.op == "jump":
            state["pc"] = instr.target
        elif instr.op == "end":
            state["done"] = True
        elif instr.op == "goto":
            assert instr.step is not None
            limit = instr.step.fields.get("maxIterations", 100)
            count = state["gotos"].get(instr.step.id, 0) + 1
            if count > limit:
                raise rt.fail(
                    f"jumped to {instr.step.fields['actionId']!r} more than {limit} times; "
                    "raise maxIterations if the loop is meant to be longer"
                )
            state["gotos"][instr.step.id] = count
            state["pc"] = instr.target
        elif instr.op == "loop_init":
            await self.loop_init(instr, rt)
        elif instr.op == "loop_next":
            self.loop_next(instr, rt)
        elif instr.op == "break":
            state["loops"].pop(instr.loop, None)
            state["pc"] = instr.target
        else:  # pragma: no cover - the compiler emits no other op
            raise rt.fail(f"unknown instruction {instr.op!r}")

    async def loop_init(self, instr: Instr, rt: Runtime) -> None:
        assert instr.step is not None
        items = await rt.value(instr.step.fields["items"])
        if items is None:
            items = []
        if not isinstance(items, list):
            raise rt.fail(
                f"Foreach items must be a list, got {type_word(items)}: {text(items)[:80]}"
            )
        if len(items) > self.limits.max_loop_items:
            raise rt.fail(
                f"Foreach over {len(items)} items; the limit is {self.limits.max_loop_items}"
            )
        self.state["loops"][instr.loop] = {"items": items, "index": -1}
        self.state["pc"] += 1

    def loop_next(self, instr: Instr, rt: Runtime) -> None:
        assert instr.step is not None
        frame = self.state["loops"].get(instr.loop)
        if frame is None:
            raise rt.fail("the loop was entered by a jump, not from its start")
        frame["index"] += 1
        if frame["index"] >= len(frame["items"]):
            self.state["loops"].pop(instr.loop, None)
            self.state["pc"] = instr.target
            return
        fields = instr.step.fields
        item_var = (
            fields.get("value") or fields.get("item") or fields.get("itemName") or "Local.item"
        )
        rt.set(item_var, frame["items"][frame["index"]])
        index_var = fields.get("index") or fields.get("indexName")
        if index_var:
            rt.set(index_var, frame["index"])
        self.state["pc"] += 1

    async def answer(self, request_id: str, response: Any, ctx: WorkflowContext[Any]) -> None:
        """Take the answer to the pending request, then run on, within the run's limits."""
        waiting = self.state.get("waiting")
        if not waiting or waiting.get("request") != request_id:
            raise ActionError(None, f"the workflow did not ask {request_id!r}")
        await self._budgeted(lambda deadline: self._resume(waiting, response, ctx, deadline))

    async def _resume(
        self, waiting: dict[str, Any], response: Any, ctx: WorkflowContext[Any], deadline: float
    ) -> None:
        instr = self.program.instrs[waiting["pc"]]
        assert instr.step is not None
        self.state["waiting"] = None
        outcome = await self.resumers[instr.step.kind](
            Runtime(self, ctx, instr.step), instr.step, waiting["then"], response
        )
        if outcome is PAUSE:
            self.state["waiting"]["pc"] = waiting["pc"]
            return
        self.state["pc"] = waiting["pc"] + 1
        await self._execute(ctx, deadline)
