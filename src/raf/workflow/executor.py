"""Executors, the nodes of a graph: a class with typed `@handler` methods, or a function.

    class Upper(Executor):
        @handler
        async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
            await ctx.send_message(text.upper())

    @executor
    def exclaim(text: str) -> str:   # a returned value is sent on (or is an output
        return text + "!"            # of the run when the node has no outgoing edge)

A handler's first parameter's annotation is the message type it accepts (a union accepts
several); what it sends is `WorkflowContext[T]`'s `T` and its return annotation.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, get_args, get_origin, overload

from raf.workflow.context import WorkflowContext
from raf.workflow.errors import WorkflowValidationError
from raf.workflow.typeinfo import ANY, flatten, matches, resolve_hints, type_name

_MARK = "__raf_workflow_handler__"


@dataclass(kw_only=True, slots=True)
class HandlerSpec:
    """One handler: the message types it accepts and what it may send."""

    name: str
    input_types: tuple[Any, ...]
    output_types: tuple[Any, ...]
    """`ANY` when unknown; empty when the handler sends nothing."""
    fn: Callable[..., Any]
    takes_ctx: bool

    def accepts(self, message: Any) -> bool:
        return any(matches(message, t) for t in self.input_types)


def handler(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a method of an `Executor` as the handler of its first parameter's type."""
    setattr(fn, _MARK, True)
    return fn


def _spec(fn: Callable[..., Any], *, where: str, skip_self: bool) -> HandlerSpec:
    """Read a handler's message, context and return types from its annotations."""
    if not inspect.isroutine(fn) and callable(fn):
        instance: Any = fn  # a callable object: its bound __call__ holds the annotations
        fn = instance.__call__
    params = list(inspect.signature(fn).parameters.values())
    if skip_self:
        params = params[1:]
    name = getattr(fn, "__qualname__", repr(fn))
    if not params or len(params) > 2:
        raise WorkflowValidationError(
            f"{where}: handler {name!r} must take the message and optionally the context "
            f"(message, ctx), not {len(params)} parameter(s)"
        )
    hints = resolve_hints(fn, where)
    message_param = params[0]
    if message_param.name not in hints:
        raise WorkflowValidationError(
            f"{where}: handler {name!r} must annotate its message parameter "
            f"{message_param.name!r} with the type it accepts"
        )
    input_types = flatten(hints[message_param.name])
    outputs: list[Any] = []
    unknown = False
    takes_ctx = len(params) == 2
    if takes_ctx:
        ctx_type = hints.get(params[1].name, WorkflowContext)
        if ctx_type is WorkflowContext or get_origin(ctx_type) is not WorkflowContext:
            unknown = True
        else:
            outputs.extend(flatten(get_args(ctx_type)[0]))
    if "return" in hints:
        returned = flatten(hints["return"])
        outputs.extend(t for t in returned if t is not type(None))
    elif not takes_ctx:
        unknown = True
    return HandlerSpec(
        name=name,
        input_types=input_types,
        output_types=ANY if unknown or any(t is Any for t in outputs) else tuple(outputs),
        fn=fn,
        takes_ctx=takes_ctx,
    )


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class Executor:
    """A node: typed handlers, optional state kept in checkpoints, optional compensation."""

    def __init__(self, id: str | None = None) -> None:
        self.id = id or _snake(type(self).__name__)
        self._specs: list[HandlerSpec] | None = None
        self._by_type: dict[type, HandlerSpec] = {}

    def handlers(self) -> list[HandlerSpec]:
        """The handlers of this executor, bound to it (read once, then cached)."""
        if self._specs is None:
            specs: list[HandlerSpec] = []
            seen: set[str] = set()
            for klass in type(self).__mro__:
                for attr, value in vars(klass).items():
                    if attr in seen or not getattr(value, _MARK, False):
                        continue
                    seen.add(attr)
                    spec = _spec(value, where=f"node {self.id!r}", skip_self=True)
                    spec.fn = getattr(self, attr)
                    specs.append(spec)
            self._specs = specs
        return self._specs

    def find_handler(self, message: Any) -> HandlerSpec | None:
        """The first handler that accepts `message`, or None (remembered per message
        class when a plain class decided it, since generics need the value)."""
        kind = type(message)
        found = self._by_type.get(kind)
        if found is not None:
            return found
        for spec in self.handlers():
            for tp in spec.input_types:
                if matches(message, tp):
                    if isinstance(tp, type) and get_origin(tp) is None and kind is not bool:
                        self._by_type[kind] = spec
                    return spec
        return None

    @property
    def input_types(self) -> tuple[Any, ...]:
        return tuple(t for s in self.handlers() for t in s.input_types)

    @property
    def output_types(self) -> tuple[Any, ...]:
        out: list[Any] = []
        for spec in self.handlers():
            if spec.output_types == ANY:
                return ANY
            out.extend(spec.output_types)
        return tuple(out)

    def snapshot_state(self) -> Any:
        """This node's state as JSON-ready data, kept in each checkpoint (None: stateless)."""
        return None

    def restore_state(self, state: Any) -> None:
        """Take back the state `snapshot_state` returned, when a run resumes."""

    async def compensate(self, message: Any) -> None:
        """Undo what handling `message` did; called in reverse order when the run fails."""

    @property
    def has_compensation(self) -> bool:
        return type(self).compensate is not Executor.compensate

    def describe(self) -> str:
        """A summary of the node's kind and types, used in the graph fingerprint."""
        ports = ";".join(
            f"{'|'.join(type_name(t) for t in s.input_types)}->"
            f"{'|'.join(type_name(t) for t in s.output_types)}"
            for s in self.handlers()
        )
        return f"{type(self).__module__}.{type(self).__qualname__}({ports})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r})"


class FunctionExecutor(Executor):
    """A node made of one function `(message) -> out` or `(message, ctx)`, sync or async."""

    def __init__(self, fn: Callable[..., Any], id: str | None = None) -> None:
        super().__init__(id or getattr(fn, "__name__", "function"))
        self.fn = fn

    def handlers(self) -> list[HandlerSpec]:
        if self._specs is None:
            spec = _spec(self.fn, where=f"node {self.id!r}", skip_self=False)
            spec.fn = self.fn
            self._specs = [spec]
        return self._specs

    def describe(self) -> str:
        base = super().describe()
        return f"{base}:{getattr(self.fn, '__qualname__', '')}"


@overload
def executor(fn: Callable[..., Any], /) -> FunctionExecutor: ...


@overload
def executor(*, id: str | None = None) -> Callable[[Callable[..., Any]], FunctionExecutor]: ...


def executor(
    fn: Callable[..., Any] | None = None, /, *, id: str | None = None
) -> FunctionExecutor | Callable[[Callable[..., Any]], FunctionExecutor]:
    """Make a function a node: `@executor` or `@executor(id="name")`."""
    if fn is not None:
        return FunctionExecutor(fn, id=id)

    def wrap(f: Callable[..., Any]) -> FunctionExecutor:
        return FunctionExecutor(f, id=id)

    return wrap


async def call_handler(spec: HandlerSpec, message: Any, ctx: WorkflowContext[Any] | None) -> Any:
    """Call a handler (sync or async) and return what it returned."""
    result = spec.fn(message, ctx) if spec.takes_ctx else spec.fn(message)
    if inspect.isawaitable(result):
        awaited: Awaitable[Any] = result
        return await awaited
    return result
