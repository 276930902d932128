"""A declarative action list as a node of the graph engine: it runs the list, pauses
for Question, RequestExternalInput and approvals through the engine's requests for
input, and keeps its whole position (variables, loops, program counter) in checkpoints."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from raf.core.messages import ChatMessage
from raf.decl.powerfx.values import text
from raf.decl.workflow.actions import ACTIONS, RESUMERS
from raf.decl.workflow.program import (
    Issue,
    Program,
    Step,
    WorkflowDefinitionError,
    compile_actions,
    hint,
    iter_steps,
)
from raf.decl.workflow.runtime import Interpreter, Limits, Services
from raf.stores.checkpoints import CheckpointStore
from raf.workflow.builder import WorkflowBuilder
from raf.workflow.context import InputResponse, WorkflowContext
from raf.workflow.executor import Executor, handler
from raf.workflow.workflow import Workflow

DeclarativeInput = str | dict[str, Any] | ChatMessage | list[ChatMessage]
"""What starts a declarative workflow: text, a record of inputs, a message or messages."""


class DeclarativeExecutor(Executor):
    """Runs an action list; its outputs are what SendActivity (and autoSend) said."""

    def __init__(
        self,
        program: Program,
        *,
        id: str = "actions",
        services: Services | None = None,
        limits: Limits | None = None,
        inputs: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(id)
        self.program = program
        self.inputs = dict(inputs or {})
        """Declared inputs: name to `{type, default, description}`."""
        self.interpreter = Interpreter(
            program, actions=ACTIONS, resumers=RESUMERS, services=services, limits=limits
        )

    @property
    def variables(self) -> dict[str, Any]:
        """The run's variables by scope (Local, Global, System, Workflow)."""
        return self.interpreter.vars.data

    @handler
    async def on_input(self, message: DeclarativeInput, ctx: WorkflowContext[Any]) -> None:
        """Start the action list on the run's input."""
        inputs, messages = _split_input(message)
        self.interpreter.start(read_inputs(self.inputs, inputs, messages), messages)
        await self.interpreter.run(ctx)

    @handler
    async def on_answer(self, answer: InputResponse[Any], ctx: WorkflowContext[Any]) -> None:
        """Continue after a Question, RequestExternalInput or approval was answered."""
        await self.interpreter.answer(answer.request_id, answer.response, ctx)

    def snapshot_state(self) -> Any:
        return self.interpreter.snapshot()

    def restore_state(self, state: Any) -> None:
        self.interpreter.restore(state)

    def describe(self) -> str:
        kinds = ",".join(f"{s.id}:{s.kind}" for s in iter_steps(self.program))
        return f"{super().describe()}[{kinds}]"


def _split_input(message: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    if isinstance(message, dict):
        said = message.get("message", message.get("text"))
        records = [{"role": "user", "text": text(said)}] if said is not None else []
        return dict(message), records
    if isinstance(message, ChatMessage):
        message = [message]
    if isinstance(message, list):
        records = [
            {"role": str(m.role), "text": m.text} for m in message if isinstance(m, ChatMessage)
        ]
        return {}, records
    return {}, [{"role": "user", "text": text(message)}]


def _coerce(value: Any, kind: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        if kind == "integer":
            return int(value.strip())
        if kind == "number":
            number = float(value.strip())
            return int(number) if number.is_integer() else number
    except ValueError:
        return value
    if kind == "boolean":
        return value.strip().lower() in ("true", "yes", "1")
    return value


def read_inputs(
    declared: Mapping[str, Any], given: dict[str, Any], messages: list[dict[str, Any]]
) -> dict[str, Any]:
    """The run's inputs: a record given as input, or text that is a JSON record, or — when
    one input is declared — the text itself; declared defaults fill the gaps, and declared
    types (integer, number, boolean) convert text."""
    inputs = dict(given)
    said = messages[-1]["text"] if messages and not given else None
    if said is not None:
        try:
            parsed = json.loads(said)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            inputs = parsed
        elif len(declared) == 1:
            inputs = {next(iter(declared)): said}
    for name, spec in declared.items():
        spec = spec if isinstance(spec, Mapping) else {}
        if name not in inputs and "default" in spec:
            inputs[name] = spec["default"]
        if name in inputs:
            inputs[name] = _coerce(inputs[name], spec.get("type"))
    return inputs


async def close_services(workflow: Workflow) -> None:
    """Close the connections a declarative workflow opened (its MCP servers)."""
    for node in workflow.nodes.values():
        if not isinstance(node, DeclarativeExecutor):
            continue
        for server in node.interpreter.services.mcp_servers.values():
            aclose = getattr(server, "aclose", None)
            if aclose is not None:
                await aclose()


def literal_name(step: Step, key: str) -> str | None:
    """The name a step's `key` gives as written (`name` or `{name: …}`); None for a
    formula (`=…`), which only a run can read, or no name at all."""
    raw = step.fields.get(key)
    if isinstance(raw, Mapping):
        raw = raw.get("name")
    if not isinstance(raw, str) or raw.startswith("="):
        return None
    return raw


def check_services(program: Program, services: Services) -> list[Issue]:
    """Agents, tools and MCP servers named by literal names that nobody provides."""
    issues: list[Issue] = []
    wanted = {
        "InvokeAgent": ("agent", services.agents, "agent"),
        "InvokeFunctionTool": ("functionName", services.tools, "function tool"),
        "InvokeMcpTool": ("server", services.mcp_servers, "MCP server"),
    }
    for step in iter_steps(program):
        if step.kind not in wanted:
            continue
        key, known, word = wanted[step.kind]
        if step.kind == "InvokeMcpTool" and "serverUrl" in step.fields:
            continue  # a name nobody registered falls back to the URL
        raw = literal_name(step, key)
        if raw is None or raw in known:
            continue
        shown = ", ".join(sorted(known)) or "none"
        issues.append(
            Issue(
                path=(*step.path, key),
                message=f"no {word} {raw!r}{hint(raw, known)} (known: {shown})",
            )
        )
    return issues


def build_declarative_workflow(
    actions: Any,
    *,
    name: str = "workflow",
    description: str = "",
    services: Services | None = None,
    limits: Limits | None = None,
    checkpoint_store: CheckpointStore | None = None,
    path: tuple[str | int, ...] = ("actions",),
    check: bool = True,
    inputs: Mapping[str, Any] | None = None,
    locate: Callable[[tuple[str | int, ...]], str] | None = None,
) -> Workflow:
    """A workflow that runs an action list; every problem of the list is raised at once
    as a `WorkflowDefinitionError`. `locate` gives an action's place in its file, which
    the errors of a run then name."""
    program = compile_actions(actions, path)
    if locate is not None:
        for step in iter_steps(program):
            step.where = locate(step.path)
    services = services or Services()
    if check:
        issues = check_services(program, services)
        if issues:
            raise WorkflowDefinitionError(issues)
    node = DeclarativeExecutor(program, services=services, limits=limits, inputs=inputs)
    builder = WorkflowBuilder(name, start=node, description=description)
    # one superstep per start and per answer; the action cap bounds the run instead
    builder.with_max_supersteps((limits or Limits()).max_steps + 1)
    if checkpoint_store is not None:
        builder.with_checkpoint_store(checkpoint_store)
    return builder.build()
