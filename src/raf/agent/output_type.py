"""Output types: a Python type or a JSON Schema turned into the schema the model is asked
for, and the model's JSON answer checked and turned back into a value."""

from __future__ import annotations

import asyncio
import contextvars
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from raf.core.bounded_parse import ParseLimits, load_json
from raf.core.errors import ConfigurationError, MissingExtraError
from raf.core.output import OutputSchema
from raf.core.schema_limits import check_schema_limits

if TYPE_CHECKING:
    from pydantic import TypeAdapter

# pydantic is imported where an output type is made or read: a run without one (and the
# program's start) never pays for it

WRAP_KEY = "result"
"""A type that is not an object (a list, a union, a scalar) is asked for as
`{"result": ...}`: every API wants an object at the root."""

_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?(.*?)\n?\s*(```\s*)?$", re.S)
_MAX_NULL_PASSES = 16
_QUALIFIED = re.compile(r"\b[\w]+\.")

ANSWER_LIMITS = ParseLimits(max_bytes=16 * 1024 * 1024, max_nodes=1_000_000, max_int_digits=4_300)
"""How big a structured answer may be read: its size, nesting (64 levels), values and an
integer's digits; past them the answer is refused like any that is not the type."""

OUTPUT_WORKERS = 4
"""Threads that compile output schemas and check answers against them, so that neither
holds the event loop; more work than this at once waits its turn."""

T = TypeVar("T")
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(OUTPUT_WORKERS, thread_name_prefix="raf-output")
        return _pool


async def off_the_loop(work: Callable[..., T], *args: Any) -> T:
    """`work(*args)` on one of the output workers (in the caller's context), awaited: a
    schema from a request or an answer checked against it is CPU work whose size the
    caller chooses."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(_executor(), context.run, work, *args)


class OutputMismatch(Exception):
    """An answer that is not the output type; `errors` says why, for the model to read."""

    def __init__(self, errors: str) -> None:
        self.errors = errors
        super().__init__(errors)


@dataclass(kw_only=True, slots=True)
class OutputType:
    """A resolved output type: the schema to ask for and how to check an answer."""

    schema: OutputSchema
    wrapped: bool
    """Whether the answer comes as `{"result": value}`."""
    type_name: str
    validate: Callable[[Any], Any]
    """Checks the parsed JSON; raises `OutputMismatch` with what was wrong."""
    source: Any = None
    """What the user gave: the type or the JSON Schema dict."""

    def parse(self, text: str) -> Any:
        """The answer text as the validated value; `OutputMismatch` if it is not one."""
        body = _unfenced(text)
        try:
            data = load_json(body, limits=ANSWER_LIMITS)
        except ConfigurationError as exc:  # past a limit: a value no type needs
            raise OutputMismatch(f"the answer is too large to read: {exc.message}") from None
        except ValueError as exc:
            raise OutputMismatch(f"the answer is not valid JSON ({exc})") from None
        return self.validate(self._unwrapped(data))

    async def parse_off_loop(self, text: str) -> Any:
        """`parse`, on an output worker: checking an answer against a large schema, or
        its patterns, takes as long as the two make it."""
        return await off_the_loop(self.parse, text)

    def partial(self, text: str) -> Any:
        """What the JSON written so far says (dicts, lists, scalars); None before any."""
        body = _unfenced(text).strip()
        if not body:
            return None
        from pydantic_core import from_json

        try:
            data = from_json(body, allow_partial="trailing-strings")
        except ValueError:
            return None
        if self.wrapped:
            return data.get(WRAP_KEY) if isinstance(data, dict) else None
        return data

    def _unwrapped(self, data: Any) -> Any:
        if not self.wrapped:
            return data
        if not isinstance(data, dict) or WRAP_KEY not in data:
            raise OutputMismatch(f'the answer must be a JSON object {{"{WRAP_KEY}": ...}}')
        return data[WRAP_KEY]


def resolve_output_type(output_type: Any, *, where: str) -> OutputType:
    """The output type for a Python type or a JSON Schema dict; refused with `where`."""
    if isinstance(output_type, OutputType):
        return output_type
    if isinstance(output_type, dict):
        return _json_schema_type(output_type, where=where)
    from pydantic import TypeAdapter

    try:
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        schema = adapter.json_schema()
    except Exception as exc:  # pydantic raises several kinds for a type it cannot describe
        raise ConfigurationError(
            f"{output_type!r} cannot be an output type: {exc}; use a pydantic model, "
            "dataclass, TypedDict, a list or union of them, or a scalar",
            key_path=where,
        ) from None
    name = getattr(output_type, "__name__", "") if isinstance(output_type, type) else ""

    def validate(data: Any) -> Any:
        return _validate_dropping_nulls(adapter, data)

    typed = _typed(schema, name or "final_result", validate, output_type)
    typed.type_name = name or _QUALIFIED.sub("", str(output_type))
    return typed


def _typed(
    schema: dict[str, Any], name: str, validate: Callable[[Any], Any], source: Any
) -> OutputType:
    wrapped = schema.get("type") != "object"
    if wrapped:
        defs: dict[str, Any] = {k: schema.pop(k) for k in ("$defs", "definitions") if k in schema}
        root: dict[str, Any] = {
            "type": "object",
            "properties": {WRAP_KEY: schema},
            "required": [WRAP_KEY],
            "additionalProperties": False,
            **defs,
        }
    else:
        root = schema
    title = str(schema.get("title") or name)
    description = str(schema.get("description") or "")
    return OutputType(
        schema=OutputSchema(
            name=_NAME.sub("_", name)[:64] or "final_result",
            json_schema=root,
            description=description or f"The final answer, as {title}.",
        ),
        wrapped=wrapped,
        type_name=title,
        validate=validate,
        source=source,
    )


def _validate_dropping_nulls(adapter: TypeAdapter[Any], data: Any) -> Any:
    """Validate; a `null` the type refuses is taken as a field left out (strict schemas
    make every optional field nullable), so its default applies."""
    from pydantic import ValidationError

    for _ in range(_MAX_NULL_PASSES):
        try:
            return adapter.validate_python(data)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            nulls = [e["loc"] for e in errors if e.get("input", 0) is None and e["loc"]]
            if not nulls or not _drop(data, nulls):
                raise OutputMismatch(_pydantic_errors(errors)) from None
    raise OutputMismatch("too many null fields")  # pragma: no cover


def _drop(data: Any, locations: list[tuple[Any, ...]]) -> bool:
    """Remove the keys at `locations` (where their parent is a dict); whether any went."""
    dropped = False
    for loc in locations:
        parent = data
        for step in loc[:-1]:
            try:
                parent = parent[step]
            except (KeyError, IndexError, TypeError):
                parent = None
                break
        if isinstance(parent, dict) and loc[-1] in parent and parent[loc[-1]] is None:
            del parent[loc[-1]]
            dropped = True
    return dropped


def _pydantic_errors(errors: list[Any]) -> str:
    lines = []
    for error in errors:
        where = ".".join(str(p) for p in error["loc"]) or "(the whole answer)"
        lines.append(f"{where}: {error['msg']}")
    return "; ".join(lines)


def _json_schema_type(schema: dict[str, Any], *, where: str) -> OutputType:
    """A JSON-Schema output type: the value is the JSON itself, checked with jsonschema.
    The schema is held to `SCHEMA_LIMITS` before anything else reads it."""
    try:
        import jsonschema
    except ImportError:
        raise MissingExtraError("a JSON-Schema output type", "templates", "jsonschema") from None
    check_schema_limits(schema, where=where)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ConfigurationError(
            f"the output schema is not a valid JSON Schema: {exc.message}", key_path=where
        ) from None
    from raf.core.schema_refs import schema_validator

    validator = schema_validator(schema, where=where, feature="a JSON-Schema output type")

    def validate(data: Any) -> Any:
        for _ in range(_MAX_NULL_PASSES):
            try:
                errors = list(validator.iter_errors(data))
            except ConfigurationError as exc:  # nested deeper than the checker can follow
                raise OutputMismatch(exc.message) from None
            if not errors:
                return data
            nulls = [tuple(e.absolute_path) for e in errors if e.instance is None]
            if not nulls or not _drop(data, [n for n in nulls if n]):
                lines = [
                    f"{'.'.join(str(p) for p in e.absolute_path) or '(the whole answer)'}: "
                    f"{e.message}"
                    for e in errors
                ]
                raise OutputMismatch("; ".join(lines))
        raise OutputMismatch("too many null fields")  # pragma: no cover

    return _typed(dict(schema), str(schema.get("title") or "final_result"), validate, schema)


def _unfenced(text: str) -> str:
    """The answer without a Markdown code fence around it (models without a native
    structured-output mechanism often add one)."""
    match = _FENCE.match(text)
    return match.group(1) if match else text


def jsonable(value: Any) -> Any:
    """A validated value as plain JSON data (for stream updates sent over the wire)."""
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value)


def check_for_client(client: Any, output: OutputType, *, where: str) -> None:
    """Refuse now a schema the client's API cannot express (found through decorators'
    `.inner`); clients without such limits accept every schema."""
    seen: Any = client
    for _ in range(16):
        check = getattr(seen, "check_output_schema", None)
        if callable(check):
            try:
                check(output.schema)
            except ConfigurationError as exc:
                raise ConfigurationError(exc.message, key_path=where) from None
            return
        seen = getattr(seen, "inner", None)
        if seen is None:
            return
