"""Reading request bodies and turning failures into `ServeError`s, for every HTTP API."""

from __future__ import annotations

import json
import logging
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from raf.core.errors import ApprovalError, ModelError, RafError, SessionError
from raf.core.guardrails import GuardrailTripped
from raf.serve.errors import ServeError

log = logging.getLogger("raf.serve")

ModelT = TypeVar("ModelT", bound=BaseModel)


def parse_body(raw: bytes, model: type[ModelT], *, empty_ok: bool = False) -> ModelT:
    """A request body as `model`: 400 for JSON that does not parse, 422 for JSON of the
    wrong shape, each saying where."""
    if not raw.strip():
        if empty_ok:
            return model()
        raise ServeError(400, "malformed_json", "the request body is empty; send a JSON object")
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ServeError(
            400,
            "malformed_json",
            f"the request body is not valid JSON (line {exc.lineno}, column {exc.colno}): "
            f"{exc.msg}",
        ) from None
    except UnicodeDecodeError:
        raise ServeError(400, "malformed_json", "the request body is not UTF-8 text") from None
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
        raise ServeError(
            422, "invalid_request", "the request does not fit: " + "; ".join(problems)
        ) from None


def error_for(exc: BaseException) -> ServeError:
    """The HTTP error a failure becomes; unexpected ones are logged and not detailed."""
    if isinstance(exc, ServeError):
        return exc
    if isinstance(exc, ApprovalError):
        return ServeError(409, "approval_refused", str(exc))
    if isinstance(exc, ModelError):
        return ServeError(502, "model_error", str(exc), retryable=exc.retryable)
    if isinstance(exc, SessionError):
        return ServeError(503, "session_store_error", str(exc))
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
