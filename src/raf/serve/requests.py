"""Reading request bodies and turning failures into `ServeError`s, for every HTTP API."""

from __future__ import annotations

import json
import logging
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from raf.core.errors import (
    ApprovalError,
    OutputValidationError,
    RafError,
    SessionConflictError,
    SessionError,
    SessionFormatError,
)
from raf.core.guardrails import GuardrailTripped
from raf.serve.errors import ServeError
from raf.serve.model_errors import is_model_failure, model_error

log = logging.getLogger("raf.serve")

ModelT = TypeVar("ModelT", bound=BaseModel)


_SURROGATE_HINT = re.compile(rb"\\u[dD][89a-fA-F]")
"""Where a surrogate escape may start: a quick look before the exact scan below."""

_SURROGATE_ESCAPE = re.compile(
    rb"(?<!\\)(?:\\\\)*\\u(?:"
    rb"(?P<pair>[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?P<lone>[dD][89a-fA-F][0-9a-fA-F]{2}))"
)
"""A `\\uD800`-`\\uDFFF` escape that is an escape (an even run of backslashes before it),
either a high one with its low one (a character) or alone (no character at all)."""


def _place(raw: bytes, offset: int) -> str:
    """Where `offset` is in a body, as a client's editor counts: byte, line and column."""
    line = raw.count(b"\n", 0, offset) + 1
    column = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
    return f"byte {offset} (line {line}, column {column})"


def body_text(raw: bytes) -> str:
    """A request body as text; a 400 saying where when it is not Unicode text: bytes that
    are not UTF-8, or a surrogate escape without its pair (`\\ud800`), which a JSON
    parser would turn into a string that no encoder can write back out."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ServeError(
            400,
            "malformed_json",
            f"the request body is not UTF-8 text: byte 0x{raw[exc.start]:02x} at "
            f"{_place(raw, exc.start)} ({exc.reason}); send JSON as UTF-8",
        ) from None
    if _SURROGATE_HINT.search(raw) is None:
        return text
    for match in _SURROGATE_ESCAPE.finditer(raw):
        if match.group("lone") is not None:
            start = match.start("lone") - 2
            raise ServeError(
                400,
                "malformed_json",
                f"the request body has a lone surrogate escape "
                f"{raw[start : start + 6].decode('ascii')} at {_place(raw, start)}: it "
                "stands for no character; send the character itself or both halves of "
                "its surrogate pair",
            )
    return text


def parse_body(raw: bytes, model: type[ModelT], *, empty_ok: bool = False) -> ModelT:
    """A request body as `model`: 400 for JSON that does not parse or is not Unicode
    text, 422 for JSON of the wrong shape, each saying where."""
    if not raw.strip():
        if empty_ok:
            return model()
        raise ServeError(400, "malformed_json", "the request body is empty; send a JSON object")
    text = body_text(raw)
    try:  # pydantic's own JSON reader takes the usual body in one step
        return model.model_validate_json(raw)
    except ValidationError:
        pass  # read again below, for the messages: they say where, as for any body
    try:
        # a UTF-8 byte order mark is allowed, as json.loads allowed it on bytes
        data = json.loads(text.removeprefix("\ufeff"))
    except json.JSONDecodeError as exc:
        raise ServeError(
            400,
            "malformed_json",
            f"the request body is not valid JSON (line {exc.lineno}, column {exc.colno}): "
            f"{exc.msg}",
        ) from None
    except ValueError as exc:  # a number too long to convert, say
        raise ServeError(
            400, "malformed_json", f"the request body is not usable JSON: {exc}"
        ) from None
    except RecursionError:
        raise ServeError(400, "json_too_deep", "the JSON body nests too deeply") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()
        ]
        error = ServeError(
            422, "invalid_request", "the request does not fit: " + "; ".join(problems)
        )
        error.param = field_path(exc.errors()[0]["loc"])
        error.openai_code = openai_code(exc.errors()[0]["type"])
        raise error from None


def openai_code(kind: str) -> str:
    """OpenAI's code for a pydantic error of type `kind`: a field left out, a value of
    the wrong type, or one it does not take."""
    if kind == "missing":
        return "missing_required_parameter"
    if kind.endswith(("_type", "_parsing")):
        return "invalid_type"
    return "invalid_value"


_TYPE_STEP = re.compile(r"^(str|int|float|bool|none|dict|list|function-\w+)\b|[\[,]")
"""A step of a pydantic error location that names a type tried (a union's member), not
a field."""


def field_path(loc: tuple[int | str, ...]) -> str | None:
    """A pydantic error location as the request field it names, written as clients
    write it: `messages[0].content` (the types a union tried are left out)."""
    out = ""
    for step in loc:
        if isinstance(step, int):
            out += f"[{step}]"
        elif _TYPE_STEP.search(step):
            break
        else:
            out += f".{step}" if out else step
    return out or None


def error_for(exc: BaseException) -> ServeError:
    """The HTTP error a failure becomes; unexpected ones are logged and not detailed."""
    if isinstance(exc, ServeError):
        return exc
    if isinstance(exc, ApprovalError):
        return ServeError(409, "approval_refused", str(exc))
    if is_model_failure(exc):  # provider and status only: its URL and body go to the log
        return model_error(exc)
    if isinstance(exc, SessionError):
        return store_failure(exc)
    if isinstance(exc, OutputValidationError):  # the model's fault, told as a gateway's
        return ServeError(
            502,
            "invalid_model_output",
            f"the model's answer is not a valid {exc.type_name} after {exc.attempts} "
            f"attempt(s): {exc.errors[:2000]}",
        )
    if isinstance(exc, GuardrailTripped):  # a refusal the client should read, not a fault
        return ServeError(
            422,
            f"{exc.kind}_guardrail_tripped",
            str(exc),
            guardrail=exc.guardrail,
            reason=exc.reason,
        )
    if isinstance(exc, RafError):
        return ServeError(500, "run_failed", f"{type(exc).__name__}: {exc}")
    log.exception("unexpected failure while serving a request", exc_info=exc)
    return ServeError(500, "internal_error", "the server failed; its log says why")


def json_line(value: Any) -> str:
    """Compact JSON for SSE data lines."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


STORE_UNAVAILABLE = (
    "the session store is unavailable (it failed or did not answer in time); try again shortly"
)
"""What a client reads when the session store fails: never the store's own message,
which names its address, user and database."""


def store_failure(exc: SessionError) -> ServeError:
    """The 503 `session_store_error` a failure of the session store becomes, on every
    surface. Its message says what kind of failure it was and nothing of the store (no
    URL, host, port, user or database); the store's own message, which names its
    address without the password, goes to the server's log."""
    log.warning("session store: %s: %s", type(exc).__name__, exc)
    if isinstance(exc, SessionConflictError):
        message = (
            "the session changed in another request while this one ran, and this turn "
            "could not be added to it; it was not stored: load the session and try again"
        )
    elif isinstance(exc, SessionFormatError):
        message = (
            "the stored session cannot be read (damaged, or written by a newer raf); "
            "the server's log says more"
        )
    else:
        message = STORE_UNAVAILABLE
    return ServeError(503, "session_store_error", message)
