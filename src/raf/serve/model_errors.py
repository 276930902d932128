"""What a client of the server learns of a failed model call: which provider, what kind
of failure and its HTTP status, whether a retry can help. Never the provider's URL or
the body it answered (they name internal hosts and echo requests); the whole error,
redacted, goes to the server's log."""

from __future__ import annotations

import logging

from raf.clients.errors import (
    AuthenticationError,
    ClientError,
    ContextOverflowError,
    InvalidResponseError,
    ModelConnectionError,
    ModelNotFoundError,
    RateLimitError,
    RequestTimeoutError,
    ServerError,
    StreamInterruptedError,
    redact,
)
from raf.core.errors import ModelError, RafError
from raf.serve.errors import ServeError

__all__ = ["is_model_failure", "model_error", "public_message"]

log = logging.getLogger("raf.serve")

_WHAT: tuple[tuple[type[ClientError], str], ...] = (
    (RateLimitError, "is rate limited"),
    (AuthenticationError, "refused the server's credentials"),
    (ModelNotFoundError, "does not know the model"),
    (ContextOverflowError, "found the conversation longer than the model's context window"),
    (ModelConnectionError, "could not be reached"),
    (RequestTimeoutError, "did not answer in time"),
    (StreamInterruptedError, "broke off its answer"),
    (InvalidResponseError, "answered with something that is not its protocol"),
    (ServerError, "failed on its side"),
)
"""What each kind of client error is called in a client's message."""


def _model_error_names() -> set[str]:
    """The class names of every model error raf knows (a durable run keeps only that)."""
    names, todo = set(), [ModelError]
    while todo:
        cls = todo.pop()
        names.add(cls.__name__)
        todo += cls.__subclasses__()
    return names


def is_model_failure(exc: BaseException) -> bool:
    """A model error, or a durable run that ended with one (it carries the type's name)."""
    if isinstance(exc, ModelError):
        return True
    kind = getattr(exc, "error_type", None)
    return isinstance(exc, RafError) and isinstance(kind, str) and kind in _model_error_names()


def public_message(exc: BaseException) -> str:
    """The failure as a client may read it: provider, kind and status, nothing else."""
    if not isinstance(exc, ModelError):  # a durable run's: only the type's name is known
        kind = getattr(exc, "error_type", "ModelError")
        return f"the model call failed ({kind}); the server's log has the details"
    provider = exc.provider if isinstance(exc, ClientError) and exc.provider else ""
    what = next((said for cls, said in _WHAT if isinstance(exc, cls)), "refused the request")
    if not isinstance(exc, ClientError):
        what = "failed"
    who = f"the model provider {provider}".rstrip()
    status = f" (HTTP {exc.status})" if exc.status is not None else ""
    retry = "; retrying later can help" if exc.retryable else ""
    return f"{who} {what}{status}{retry}; the server's log has the details"


def model_error(exc: BaseException) -> ServeError:
    """The 502 a failed model call becomes; the whole error, redacted, is logged."""
    log.warning("a model call failed: %s: %s", type(exc).__name__, redact(str(exc)))
    retryable = bool(getattr(exc, "retryable", False))
    return ServeError(502, "model_error", public_message(exc), retryable=retryable)
