"""Errors the serve layer answers with: an HTTP status, a stable code and a message."""

from __future__ import annotations

from typing import Any

from raf.core.errors import RafError


class ServeError(RafError):
    """A request the server refuses; becomes `{"error": {"code", "message"}}` with `status`."""

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
