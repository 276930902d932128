"""OpenTelemetry for raf: GenAI spans and metrics through the middleware seam.

Needs the `otel` extra (`pip install 'raf-agents[otel]'`); `import raf` never imports it.
"""

from __future__ import annotations

from raf.core.errors import MissingExtraError

try:
    import opentelemetry.sdk.trace  # noqa: F401  (the SDK is what the collector runs on)
except ImportError as exc:
    raise MissingExtraError("tracing (raf.observability)", "otel", exc.name) from exc

from raf.observability.collector import InMemoryTraces, RunTrace, SpanEvent, SpanNode
from raf.observability.tracing import Tracing, capture_content_from_env, instrument

__all__ = [
    "InMemoryTraces",
    "RunTrace",
    "SpanEvent",
    "SpanNode",
    "Tracing",
    "capture_content_from_env",
    "instrument",
]
