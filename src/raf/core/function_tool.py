"""`@tool`: a typed Python function (sync or async) becomes a validated tool."""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_origin, get_type_hints, overload

from raf.core.errors import ToolDefinitionError
from raf.core.plain_arguments import (
    MISSING,
    PlainParameter,
    check_plain,
    plain_parameter,
    plain_schema,
)
from raf.core.run_context import RunContext
from raf.core.tool_threads import run_in_tool_thread
from raf.core.tools import ToolContext, ToolResult, check_tool_name

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

TOOL_ACTIONS = ("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other")
"""What a call of a tool may declare it does (`action`), for editors that show tool calls
by what they do: read files, edit them, delete or move them, search, run a command or
code, think, fetch from the web, or something else."""

_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?)\s*:?\s*$"
)
_ARG_LINE = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:[\w\[\], ]+\s+)?(\w+)\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into the description and per-parameter descriptions.

    Understands Google style (``Args:`` with ``name: text`` lines) and Sphinx
    ``:param name: text`` lines.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        sphinx = _SPHINX_PARAM.match(line)
        if sphinx:
            current = sphinx.group(1)
            params[current] = sphinx.group(2).strip()
            section = "sphinx"
            continue
        if line.strip().startswith(":"):
            section, current = "sphinx", None
            continue
        header = _SECTION.match(line)
        if header:
            section = header.group(1).lower()
            current = None
            continue
        if section is None:
            description.append(line)
        elif section in ("args", "arguments", "parameters", "params"):
            arg = _ARG_LINE.match(line)
            indent = len(line) - len(line.lstrip())
            if arg and indent <= 4:
                current = arg.group(1)
                params[current] = arg.group(2).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
        elif section == "sphinx" and current and line.strip():
            params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(description).strip(), params


_Declared = tuple[str, Any, Any, "str | None"]
"""A parameter as declared: name, annotation, default (or MISSING), description."""


class FunctionTool:
    """A tool backed by a Python function, its arguments checked by a pydantic model.

    Tools whose parameters are all plainly typed (see `raf.core.plain_arguments`) get
    their schema without pydantic and build the model only when arguments need it.
    """

    __slots__ = (
        "_arg_model",
        "_context_param",
        "_declared",
        "_field_names",
        "_fn",
        "_is_async",
        "_plain",
        "_run_in_thread",
        "_run_param",
        "action",
        "description",
        "kind",
        "name",
        "parameters",
        "requires_approval",
        "timeout",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        approval_required: bool = False,
        kind: str = "function",
        run_in_thread: bool | None = None,
        timeout: float | None = None,
        blocking: bool | None = None,
        action: str | None = None,
    ) -> None:
        self._fn = fn
        self.name: str = name or str(getattr(fn, "__name__", ""))
        if self.name == "<lambda>":
            raise ToolDefinitionError(
                f"{fn!r} is a lambda, and a tool needs what a lambda cannot have: a "
                "name, type hints for its parameters and a docstring, which tell the model "
                "what it does and what to send. Write it as a function, e.g.\n"
                "    def get_weather(city: str) -> str:\n"
                '        """The weather in a city, now."""\n'
                "        return ...\n"
                "and pass tools=[get_weather]"
            )
        check_tool_name(self.name, where=f"from {fn!r}")
        doc_description, param_docs = parse_docstring(inspect.getdoc(fn))
        self.description = description if description is not None else doc_description
        self.kind = kind
        if action is not None and action not in TOOL_ACTIONS:
            raise ToolDefinitionError(
                f"tool {self.name!r}: action must be one of {', '.join(TOOL_ACTIONS)}, "
                f"not {action!r}"
            )
        self.action = action
        """What a call does (one of `TOOL_ACTIONS`); None: judged from the name."""
        self.requires_approval = approval_required
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ToolDefinitionError(
                f"tool {self.name!r}: timeout must be a number of seconds above 0, got {timeout!r}"
            )
        self.timeout: float | None = float(timeout) if timeout is not None else None
        self._is_async = inspect.iscoroutinefunction(fn)
        self._run_in_thread = _blocking(self.name, blocking, run_in_thread)
        self._context_param: str | None = None
        self._run_param: str | None = None
        self._declared = self._read_parameters(fn, param_docs)
        self._field_names = tuple(name for name, _, _, _ in self._declared)
        self._arg_model: type[BaseModel] | None = None
        self._plain: tuple[PlainParameter, ...] | None = None
        self.parameters: dict[str, Any]
        plain = [p for p in (plain_parameter(*d) for d in self._declared) if p is not None]
        if len(plain) == len(self._declared):
            self._plain = tuple(plain)
            self.parameters = plain_schema(self._plain)
            return
        model = self._model()
        try:
            schema = model.model_json_schema()
        except Exception as exc:  # pydantic raises several types here
            raise ToolDefinitionError(
                f"tool {self.name!r}: its parameters cannot be described as JSON Schema: {exc}"
            ) from exc
        self.parameters = strip_titles(schema)

    def _read_parameters(self, fn: Callable[..., Any], docs: dict[str, str]) -> list[_Declared]:
        try:
            signature = inspect.signature(fn)
            hints = get_type_hints(fn, include_extras=True)
        except (TypeError, ValueError, NameError) as exc:
            raise ToolDefinitionError(
                f"tool {self.name!r}: cannot read the signature of {fn!r}: {exc}"
            ) from exc
        declared: list[_Declared] = []
        for param in signature.parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ToolDefinitionError(
                    f"tool {self.name!r}: parameter {param.name!r} is *args/**kwargs; "
                    "a tool needs named, typed parameters"
                )
            annotation = hints.get(param.name, inspect.Parameter.empty)
            if annotation is ToolContext:
                self._context_param = param.name
                continue
            if annotation is RunContext or get_origin(annotation) is RunContext:
                self._run_param = param.name  # the run and its deps, not the model's to fill
                continue
            if annotation is inspect.Parameter.empty:
                raise ToolDefinitionError(
                    f"tool {self.name!r}: parameter {param.name!r} has no type hint; "
                    "add one so the model knows what to send"
                )
            default = MISSING if param.default is inspect.Parameter.empty else param.default
            described = (
                default_field_description(default)
                or annotated_description(annotation)
                or docs.get(param.name)
            )
            declared.append((param.name, annotation, default, described))
        return declared

    def _model(self) -> type[BaseModel]:
        """The pydantic model of the arguments, built on first need."""
        if self._arg_model is not None:
            return self._arg_model
        from pydantic import ConfigDict, Field, create_model
        from pydantic.fields import FieldInfo

        fields: dict[str, Any] = {}
        for name, annotation, default, doc in self._declared:
            if isinstance(default, FieldInfo):  # `x: int = Field(3, ge=0)`: the field itself
                # as pydantic reads `Annotated[int, Field(3, ge=0)]`, the description last
                fields[name] = Annotated[annotation, default, Field(description=doc)]
            else:
                fields[name] = (
                    annotation,
                    Field(... if default is MISSING else default, description=doc),
                )
        try:
            self._arg_model = create_model(
                f"{self.name}_arguments",
                __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
                **fields,
            )
        except Exception as exc:
            raise ToolDefinitionError(
                f"tool {self.name!r}: its parameters cannot become a schema: {exc}"
            ) from exc
        return self._arg_model

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        return self.requires_approval

    @property
    def blocking(self) -> bool:
        """Whether the sync function may block, so it runs on raf's tool threads (the
        default); False: it is trivial and runs inline, in the run's task."""
        return self._run_in_thread

    @property
    def reads_context(self) -> bool:
        """Whether the function declares a `ToolContext` or `RunContext` parameter; when it
        does not, `invoke` never reads its `context` argument."""
        return self._context_param is not None or self._run_param is not None

    @property
    def runs_in_tool_thread(self) -> bool:
        """Whether a call runs the function on raf's tool pool (a sync function, not
        declared `blocking=False`): apart from that thread, a call never waits."""
        return not self._is_async and self._run_in_thread

    def _validated(self, arguments: Mapping[str, Any]) -> dict[str, Any] | str:
        """The function's keyword arguments as pydantic checks them, or what is wrong."""
        from pydantic import ValidationError

        try:
            validated = self._model().model_validate(arguments)
        except ValidationError as exc:
            return describe_validation_error(self.name, exc)
        return {name: getattr(validated, name) for name in self._field_names}

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        plain = self._plain
        # plainly typed arguments are checked here; the rest (and what fails) by pydantic
        kwargs = check_plain(plain, arguments) if plain is not None else None
        if kwargs is None:
            validated = self._validated(arguments)
            if isinstance(validated, str):
                return ToolResult.fail(validated)
            kwargs = validated
        if self._context_param is not None:
            kwargs[self._context_param] = context
        if self._run_param is not None:
            kwargs[self._run_param] = context.run if context.run is not None else RunContext()
        if self._is_async:
            value = await self._fn(**kwargs)
        elif self._run_in_thread:
            value = await run_in_tool_thread(self._fn, **kwargs)
        else:
            value = self._fn(**kwargs)
        if type(value) in _PLAIN_VALUES:
            return ToolResult(value=value)
        if isinstance(value, ToolResult):
            return value
        pydantic = sys.modules.get("pydantic")  # a BaseModel means pydantic is loaded
        if pydantic is not None and isinstance(value, pydantic.BaseModel):
            value = value.model_dump(mode="json")
        return ToolResult(value=value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The decorated function stays callable as before."""
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<FunctionTool {self.name!r}>"


_PLAIN_VALUES = frozenset({str, int, float, bool, type(None), list, dict})
"""What most functions return: neither a `ToolResult` nor a pydantic model."""

_NAME_MAPS = ("properties", "$defs", "definitions", "patternProperties")


def default_field_description(default: Any) -> str | None:
    """The description of a `Field(...)` given as a parameter's default value (`x: int =
    Field(3, description="…")`), which wins over the annotation's and the docstring's as
    in pydantic; None for any other default."""
    pydantic_fields = sys.modules.get("pydantic.fields")  # a FieldInfo means it is loaded
    if pydantic_fields is None or not isinstance(default, pydantic_fields.FieldInfo):
        return None
    description = default.description
    return description if isinstance(description, str) and description.strip() else None


def annotated_description(annotation: Any) -> str | None:
    """A parameter's description written in its annotation: `Annotated[float,
    Field(description="…")]` first (pydantic's and Microsoft Agent Framework's idiom),
    else `Annotated[int, "…"]` (a plain string); None when neither is there, and the
    docstring's `Args:` line describes it."""
    if get_origin(annotation) is not Annotated:
        return None
    from pydantic.fields import FieldInfo

    metadata = get_args(annotation)[1:]
    for item in reversed(metadata):  # pydantic lets the last Field win
        if isinstance(item, FieldInfo) and item.description:
            return item.description
    for item in metadata:
        if isinstance(item, str) and item.strip():
            return item.strip()
    return None


def strip_titles(schema: Any) -> Any:
    """Drop pydantic's generated `title` keywords: they repeat the names and cost tokens.

    Keys of `properties` and `$defs` are names, not keywords, so a property called
    "title" survives.
    """
    if isinstance(schema, list):
        return [strip_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _NAME_MAPS and isinstance(value, dict):
            out[key] = {name: strip_titles(sub) for name, sub in value.items()}
        elif key == "title" and isinstance(value, str):
            continue
        else:
            out[key] = strip_titles(value)
    return out


def describe_validation_error(tool_name: str, exc: ValidationError) -> str:
    """A short, model-readable account of what was wrong with the arguments."""
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ())) or "(arguments)"
        problems.append(f"{where}: {err.get('msg', 'invalid')}")
    return f"invalid arguments for tool {tool_name!r}: " + "; ".join(problems)


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    approval_required: bool = False,
    kind: str = "function",
    run_in_thread: bool | None = None,
    timeout: float | None = None,
    blocking: bool | None = None,
    action: str | None = None,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    approval_required: bool = False,
    kind: str = "function",
    run_in_thread: bool | None = None,
    timeout: float | None = None,
    blocking: bool | None = None,
    action: str | None = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a typed function into a tool; use bare (`@tool`) or with options.

    Sync functions run on raf's bounded tool thread pool (`raf.core.tool_threads`) so
    they never block the event loop; declare ``blocking=False`` for a trivial function
    that never waits, and it runs inline (``run_in_thread=False`` is the same, older
    spelling). ``timeout`` (seconds)
    stops a call that runs longer; the model reads an error result instead. ``action``
    says what a call does (one of `TOOL_ACTIONS`: read, edit, search, execute, …) for
    editors that show calls by it; left out, it is judged from the tool's name.
    """

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            f,
            name=name,
            description=description,
            approval_required=approval_required,
            kind=kind,
            run_in_thread=run_in_thread,
            timeout=timeout,
            blocking=blocking,
            action=action,
        )

    if fn is not None:
        return wrap(fn)
    return wrap


def _blocking(name: str, blocking: bool | None, run_in_thread: bool | None) -> bool:
    """The one setting from its two spellings; both given must agree."""
    if blocking is not None and run_in_thread is not None and blocking != run_in_thread:
        raise ToolDefinitionError(
            f"tool {name!r}: blocking={blocking!r} and run_in_thread={run_in_thread!r} "
            "disagree; they are two names for one setting, give one"
        )
    for value in (blocking, run_in_thread):
        if value is not None:
            if not isinstance(value, bool):
                raise ToolDefinitionError(
                    f"tool {name!r}: blocking must be True or False, got {value!r}"
                )
            return value
    return True
