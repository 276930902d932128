"""OpenTelemetry for raf: GenAI spans and metrics through the middleware seam.

Needs the `otel` extra (`pip install 'raf-agents[otel]'`); `import raf` never imports it.
"""

from __future__ import annotations

try:
    import opentelemetry.sdk.trace  # noqa: F401  (the SDK is what the collector runs on)
except ImportError as exc:  # pragma: no cover - exercised only on a bare install
    raise ImportError(
        "raf.observability needs OpenTelemetry: pip install 'raf-agents[otel]'"
    ) from exc

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
