"""End to end: spans leave through the OTLP/HTTP exporter to a receiver on loopback that
decodes the protobuf `ExportTraceServiceRequest`, as a collector would."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from raf import AgentBuilder, ChatOptions, tool
from raf.observability import instrument
from raf.testing import ScriptedChatClient, call, reply


class _Receiver(ThreadingHTTPServer):
    """Keeps every export request it was sent."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        self.content_types: list[str] = []


class _Handler(BaseHTTPRequestHandler):
    server: _Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.requests.append(request)
        self.server.paths.append(self.path)
        self.server.content_types.append(self.headers.get("Content-Type", ""))
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    server = _Receiver()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


async def test_spans_reach_an_otlp_http_receiver(receiver: _Receiver) -> None:
    @tool
    def lookup(city: str) -> str:
        """Look a city up."""
        return f"sunny in {city}"

    host, port = receiver.server_address[:2]
    exporter = OTLPSpanExporter(endpoint=f"http://{host!s}:{port}/v1/traces", timeout=5)
    provider = TracerProvider(resource=Resource.create({"service.name": "raf-test"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    model = ScriptedChatClient([reply("", call("lookup", city="Oslo", call_id="c1")), "Sunny."])
    agent = instrument(
        AgentBuilder("weather")
        .with_chat_client(model)
        .with_options(ChatOptions(model_id="m"))
        .with_tool(lookup),
        tracer_provider=provider,
    ).build()
    await agent.run("weather?")
    assert provider.force_flush(timeout_millis=10_000)
    provider.shutdown()

    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    assert set(receiver.content_types) == {"application/x-protobuf"}
    spans = []
    services = set()
    for request in receiver.requests:
        for resource_spans in request.resource_spans:
            for attribute in resource_spans.resource.attributes:
                if attribute.key == "service.name":
                    services.add(attribute.value.string_value)
            for scope_spans in resource_spans.scope_spans:
                assert scope_spans.scope.name == "raf"
                spans.extend(scope_spans.spans)
    assert services == {"raf-test"}
    by_name = {s.name: s for s in spans}
    assert sorted(by_name) == ["chat m", "execute_tool lookup", "invoke_agent weather"]
    assert len(spans) == 4  # two model calls
    root = by_name["invoke_agent weather"]
    assert root.parent_span_id == b""
    assert {s.parent_span_id for s in spans if s is not root} == {root.span_id}
    tool_attributes = {
        a.key: a.value.string_value for a in by_name["execute_tool lookup"].attributes
    }
    assert tool_attributes["gen_ai.tool.call.id"] == "c1"
    assert tool_attributes["gen_ai.operation.name"] == "execute_tool"


def test_the_tracing_guides_collector_example_exports_its_spans(receiver: _Receiver) -> None:
    """The guide's OTLP example (compiled only by the docs test, since it names a
    collector on localhost:4318) runs here against this receiver, as written but for
    the port."""
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "guide" / "tracing.md"
    text = page.read_text(encoding="utf-8")
    block = re.search(r"needs an OTLP collector[^\n]*\n```python\n(.*?)```", text, re.S)
    assert block is not None
    code = block.group(1)
    assert "http://localhost:4318/v1/traces" in code
    host, port = receiver.server_address[:2]
    code = code.replace("http://localhost:4318", f"http://{host!s}:{port}")
    exec(compile(code, "docs/guide/tracing.md", "exec"), {"__name__": "__docs__"})
    names = [
        span.name
        for request in receiver.requests
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    assert any(name.startswith("invoke_agent") for name in names), names
    assert any(name.startswith("chat") for name in names), names
