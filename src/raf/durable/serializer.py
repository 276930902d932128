"""How DBOS stores a durable run's inputs, step results, events, messages and errors:
JSON only. A value recorded in any other form (DBOS's default is a Python pickle, which
runs code when loaded) is refused with an error naming it, never loaded."""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

from dbos import Serializer
from dbos import _serialization as dbos_serialization

from raf.core.errors import RafError

NAME = "raf_json"
"""The serialization name recorded with every value raf writes."""

_ERROR = "__raf_error__"
_TIME = "__raf_datetime__"
_PICKLE = "py_pickle"

SCHEDULED_WORKFLOW = "raf.scheduled_run"
"""The DBOS workflow a schedule's tick runs."""


class UnsafeRecordError(RafError):
    """A durable run's record is in a form that can run code when loaded (a pickle)."""


class RecordedError(RafError):
    """An error a durable step or run ended with, as recorded: its type's name and its
    message (an exception object itself is never stored, so none is rebuilt by name)."""

    def __init__(self, message: str, *, error_type: str) -> None:
        super().__init__(message)
        self.error_type = error_type


class JsonSerializer(Serializer):
    """DBOS values as JSON: dicts, lists, strings, numbers, booleans, None; tuples become
    lists; an exception becomes its type's name and message; a datetime (a schedule's
    tick time) its ISO 8601 text. Anything else is refused
    when written, so a run never records what it could not load back faithfully."""

    def serialize(self, data: Any) -> str:
        try:
            return json.dumps(_to_json(data), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise RafError(
                f"a durable run cannot record a {type(data).__name__} as JSON ({exc}); "
                "pass JSON values"
            ) from None

    def deserialize(self, serialized_data: str) -> Any:
        try:
            return _from_json(json.loads(serialized_data))
        except ValueError:
            raise UnsafeRecordError(
                "a durable run's record is not raf's JSON (written by another program, or "
                f"altered); refused: {serialized_data[:60]!r}"
            ) from None

    def name(self) -> str:
        return NAME


def _to_json(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} is not a JSON number")
        return value
    if isinstance(value, list | tuple):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        if _ERROR in value or _TIME in value:
            raise ValueError(f"the keys {_ERROR!r} and {_TIME!r} are reserved")
        return {_key(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, datetime):
        return {_TIME: value.isoformat()}
    if isinstance(value, BaseException):
        return {_ERROR: {"type": type(value).__qualname__, "message": str(value)}}
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _key(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(f"a {type(key).__name__} key is not a JSON object key")
    return key


def _from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {_ERROR} and isinstance(value[_ERROR], dict):
            error = value[_ERROR]
            return RecordedError(
                str(error.get("message", "")), error_type=str(error.get("type", "Error"))
            )
        if set(value) == {_TIME} and isinstance(value[_TIME], str):
            return datetime.fromisoformat(value[_TIME])
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


class _RefusePickle(Serializer):
    """Stands in for DBOS's pickle serializer, which DBOS uses for any value recorded
    with the name `py_pickle` whatever serializer is configured: it writes nothing and
    loads nothing."""

    def serialize(self, data: Any) -> str:
        raise UnsafeRecordError("raf records durable runs as JSON, never as a Python pickle")

    def deserialize(self, serialized_data: str) -> Any:
        raise UnsafeRecordError(
            "a durable run's record is a Python pickle, which could run code when loaded; "
            "raf refuses it (raf writes JSON only: the record was planted or written by "
            "another program)"
        )

    def name(self) -> str:
        return _PICKLE


def refuse_pickles() -> None:
    """Make DBOS refuse pickled records in this process: DBOS reads each record's own
    serialization name and unpickles `py_pickle` values whatever serializer is
    configured, so its one pickle serializer (shared by all of DBOS's modules) is made
    to refuse."""
    pickler = dbos_serialization.DBOSDefaultSerializer
    refusing = _RefusePickle()
    pickler.serialize = refusing.serialize  # type: ignore[method-assign]
    pickler.deserialize = refusing.deserialize  # type: ignore[method-assign]


def unfinished_unsafe_runs(database: str) -> list[str]:
    """Ids of unfinished runs in the system database whose record is not raf's JSON (at
    most six), so `launch` can refuse them by name before DBOS recovers any."""
    import sqlalchemy as sa

    from raf.durable.workers import engine_url

    table = "workflow_status" if database.startswith("sqlite:") else "dbos.workflow_status"
    engine = sa.create_engine(engine_url(database), pool_size=1)
    try:
        with engine.connect() as db:
            if not sa.inspect(db).has_table(
                "workflow_status", schema=None if "." not in table else "dbos"
            ):
                return []
            rows = db.execute(
                sa.text(
                    f"SELECT workflow_uuid FROM {table} WHERE status IN ('PENDING', "
                    "'ENQUEUED') AND (serialization <> :name OR (serialization IS NULL "
                    "AND name <> :scheduled)) LIMIT 6"
                ),
                # DBOS's scheduler records a tick with no serialization name, in the
                # configured serializer (raf's JSON): its values are read as such
                {"name": NAME, "scheduled": SCHEDULED_WORKFLOW},
            ).all()
    finally:
        engine.dispose()
    return [str(r[0]) for r in rows]
