"""Errors the serve layer answers with: an HTTP status, a stable code and a message."""

from __future__ import annotations

from typing import Any

from raf.core.errors import RafError


class ServeError(RafError):
    """A request the server refuses; becomes `{"error": {"code", "message"}}` with `status`
    (`openai_body` on the OpenAI-compatible API)."""

    param: str | None = None
    """The request field at fault (`messages[0].role`), where one is; OpenAI's errors name
    it as `param`, raf's native ones in their message."""

    openai_code: str | None = None
    """OpenAI's `code` for this refusal where raf's is not one of OpenAI's
    (`invalid_type` for a field of the wrong type)."""

    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        super().__init__(message)

    def body(self) -> dict[str, Any]:
        """The JSON body sent to the client."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        error.update(self.details)
        return {"error": error}


OPENAI_TYPES = {429: "requests"}
"""OpenAI's error `type` where it is not the usual one: a rate limit on requests is
`requests`; every other 4xx (401 and 403 included) is an `invalid_request_error` and every
5xx a `server_error`."""

OPENAI_STATUS_CODES = {401: "invalid_api_key", 429: "rate_limit_exceeded"}
"""OpenAI's error `code` where the status alone decides it."""

OPENAI_CODES = frozenset(
    {
        "model_not_found",
        "missing_required_parameter",
        "invalid_type",
        "invalid_value",
        "unknown_parameter",
        "context_length_exceeded",
        "previous_response_not_found",
    }
)
"""The codes OpenAI itself sends that raf's refusals can mean; any other code of raf's
is written as `null` there (OpenAI sends `null` for a refusal it has no code for), its
meaning being in the message (a server failure's message starts with raf's code, so a
client can still tell a store outage from a model's invalid answer)."""


def openai_status(status: int) -> int:
    """The status OpenAI answers where raf's native API differs: a request of the wrong
    shape is a 400 there, not a 422."""
    return 400 if status == 422 else status


def openai_body(status: int, code: str, message: str, param: str | None = None) -> dict[str, Any]:
    """An error as OpenAI's API writes it: `{"error": {"message", "type", "param",
    "code"}}`, with the type and code OpenAI sends for the status and the refusal, and
    `null` where OpenAI has none."""
    kind = OPENAI_TYPES.get(status) or (
        "server_error" if status >= 500 else "invalid_request_error"
    )
    openai_code = OPENAI_STATUS_CODES.get(status) or (code if code in OPENAI_CODES else None)
    if openai_code is None and status >= 500:  # which failure it was, for the client's log
        message = f"{code}: {message}"
    return {
        "error": {
            "message": message,
            "type": kind,
            "param": param,
            "code": openai_code,
        }
    }


def openai_shaped(error: ServeError) -> tuple[int, dict[str, Any]]:
    """`error` as the OpenAI-compatible API answers it: its status and its body."""
    status = openai_status(error.status)
    code = error.openai_code or error.code
    return status, openai_body(status, code, error.message, error.param)


def not_found(what: str, name: str) -> ServeError:
    """The same 404 whether the thing is missing or belongs to someone else."""
    return ServeError(404, f"unknown_{what}", f"no {what} named {name!r}", **{what: name})


def require_extra(module: str, feature: str = "serving agents") -> None:
    """Import check for the `serve` extra, naming the install line when it is missing."""
    import importlib

    from raf.core.errors import MissingExtraError

    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(feature, "serve", module) from exc
