"""A plain span around work that is not an agent run (an eval case, a batch), so the runs
inside it nest under it in a trace."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from raf._version import __version__
from raf.observability import conventions as sc


def raf_tracer(tracer_provider: Any = None) -> Tracer:
    """raf's tracer from `tracer_provider` (None: the global one), named and versioned as
    every raf span is."""
    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    return provider.get_tracer("raf", __version__, schema_url=sc.SCHEMA_URL)


@contextmanager
def operation_span(
    name: str, attributes: Mapping[str, Any], *, tracer_provider: Any = None
) -> Iterator[Span]:
    """A span made current for the block; an exception that escapes marks it failed."""
    with raf_tracer(tracer_provider).start_as_current_span(
        name, attributes=dict(attributes)
    ) as span:
        yield span


def mark_failed(span: Span, description: str) -> None:
    """Set the span's status to an error with `description`."""
    span.set_status(Status(StatusCode.ERROR, description))
