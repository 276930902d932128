"""GenAI spans and metrics as agent, chat and function middleware.

`invoke_agent {name}` wraps a run, `chat {model}` each model call and `execute_tool {name}`
each tool call. The spans nest through OpenTelemetry's context, which asyncio copies into
every task: tool calls running together each open their span under the run's span, and a
sub-agent (an agent used as a tool) inherits this middleware, so its run nests under the
tool call that started it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from opentelemetry import metrics
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from raf._version import __version__
from raf.core.errors import ConfigurationError, ToolApprovalPending
from raf.core.middleware import (
    AgentRunContext,
    CallNext,
    ChatContext,
    FunctionInvocationContext,
    MiddlewareSet,
    agent_middleware,
    chat_middleware,
    function_middleware,
)
from raf.observability import conventions as sc
from raf.observability.collector import InMemoryTraces
from raf.observability.content import messages_json, system_json, value_json
from raf.observability.spans import raf_tracer

T = TypeVar("T")

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_TRACED = "raf.observability.traced"
"""Set in a context's metadata by the first tracing middleware: a second one (a sub-agent
instrumented on its own that also inherits its parent's) passes the call through."""


def capture_content_from_env() -> bool:
    """Whether `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` turns content capture on."""
    return os.environ.get(CAPTURE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


class Tracing:
    """The tracing middleware of one configuration: a tracer, a meter, whether to record
    message contents. Its three middleware are made once, so a sub-agent that inherits
    them and also has them does not trace itself twice."""

    def __init__(
        self,
        *,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        capture_content: bool | None = None,
        traces: InMemoryTraces | None = None,
    ) -> None:
        if traces is not None:
            if tracer_provider is None:
                tracer_provider = TracerProvider()
            if not isinstance(tracer_provider, TracerProvider):
                raise ConfigurationError(
                    "Tracing(traces=...) needs the OpenTelemetry SDK's TracerProvider to add "
                    f"the collector to, got {type(tracer_provider).__name__}"
                )
            tracer_provider.add_span_processor(traces)
        self.traces = traces
        self.capture_content = (
            capture_content_from_env() if capture_content is None else bool(capture_content)
        )
        self.tracer = raf_tracer(tracer_provider)
        meters = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        meter = meters.get_meter("raf", __version__, schema_url=sc.SCHEMA_URL)
        self.token_usage = meter.create_histogram(
            sc.TOKEN_USAGE_METRIC,
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=sc.TOKEN_BUCKETS,
        )
        self.operation_duration = meter.create_histogram(
            sc.OPERATION_DURATION_METRIC,
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=sc.DURATION_BUCKETS,
        )

        @agent_middleware
        async def trace_run(context: AgentRunContext, call_next: CallNext) -> None:
            await self._trace_run(context, call_next)

        @chat_middleware
        async def trace_chat(context: ChatContext, call_next: CallNext) -> None:
            await self._trace_chat(context, call_next)

        @function_middleware
        async def trace_tool(context: FunctionInvocationContext, call_next: CallNext) -> None:
            await self._trace_tool(context, call_next)

        self.middleware = MiddlewareSet(
            agent=(trace_run,), chat=(trace_chat,), function=(trace_tool,)
        )
        """The three middleware, to add outermost so they see what the others do."""

    def _span(
        self, name: str, kind: SpanKind, attributes: dict[str, Any]
    ) -> AbstractContextManager[Span]:
        """A span made current for one call; `_failed` marks a failure (OpenTelemetry's own
        marking would record the exception a second time)."""
        return self.tracer.start_as_current_span(
            name,
            kind=kind,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        )

    # -- invoke_agent -------------------------------------------------------------------

    async def _trace_run(self, context: AgentRunContext, call_next: CallNext) -> None:
        if context.metadata.setdefault(_TRACED, self) is not self:
            await call_next()
            return
        agent = context.agent
        name = context.agent_name or "agent"
        client = getattr(agent, "leaf_client", None)
        attributes: dict[str, Any] = {
            sc.OPERATION_NAME: "invoke_agent",
            sc.PROVIDER_NAME: sc.provider_name(client),
            sc.AGENT_NAME: name,
        }
        description = getattr(agent, "description", None)
        if description:
            attributes[sc.AGENT_DESCRIPTION] = str(description)
        if context.session is not None:
            attributes[sc.CONVERSATION_ID] = context.session.id
        model = _agent_model(agent)
        if model:
            attributes[sc.REQUEST_MODEL] = model
        with self._span(f"invoke_agent {name}", SpanKind.INTERNAL, attributes) as span:
            if self.capture_content:
                span.set_attribute(sc.INPUT_MESSAGES, messages_json(context.messages))
            try:
                await call_next()
            except BaseException as exc:
                _failed(span, exc)
                raise
            result = context.result
            if result is None:
                return
            if result.model_id:
                span.set_attribute(sc.RESPONSE_MODEL, result.model_id)
            if result.finish_reason is not None:
                span.set_attribute(sc.RESPONSE_FINISH_REASONS, [result.finish_reason.value])
            usage = context.run.usage
            span.set_attribute(sc.USAGE_INPUT_TOKENS, usage.input_tokens)
            span.set_attribute(sc.USAGE_OUTPUT_TOKENS, usage.output_tokens)
            if self.capture_content:
                span.set_attribute(sc.OUTPUT_MESSAGES, messages_json(result.messages))

    # -- chat ---------------------------------------------------------------------------

    async def _trace_chat(self, context: ChatContext, call_next: CallNext) -> None:
        if context.metadata.setdefault(_TRACED, self) is not self:
            await call_next()
            return
        client = getattr(context.run.agent, "leaf_client", None)
        options = context.options
        model = options.model_id or sc.client_model(client)
        common: dict[str, Any] = {
            sc.OPERATION_NAME: "chat",
            sc.PROVIDER_NAME: sc.provider_name(client),
        }
        if model:
            common[sc.REQUEST_MODEL] = model
        attributes = dict(common)
        if options.temperature is not None:
            attributes[sc.REQUEST_TEMPERATURE] = options.temperature
        if options.max_tokens is not None:
            attributes[sc.REQUEST_MAX_TOKENS] = options.max_tokens
        started = time.perf_counter()
        with self._span(f"chat {model}" if model else "chat", SpanKind.CLIENT, attributes) as span:
            if self.capture_content:
                span.set_attribute(sc.INPUT_MESSAGES, messages_json(context.messages))
                system = system_json(context.messages)
                if system is not None:
                    span.set_attribute(sc.SYSTEM_INSTRUCTIONS, system)
            try:
                await call_next()
            except BaseException as exc:
                error = _failed(span, exc)
                self.operation_duration.record(
                    time.perf_counter() - started, {**common, sc.ERROR_TYPE: error}
                )
                raise
            result = context.result
            if result is not None and result.model_id:
                common[sc.RESPONSE_MODEL] = result.model_id
                span.set_attribute(sc.RESPONSE_MODEL, result.model_id)
            self.operation_duration.record(time.perf_counter() - started, common)
            if result is None:
                return
            if result.response_id:
                span.set_attribute(sc.RESPONSE_ID, result.response_id)
            if result.finish_reason is not None:
                span.set_attribute(sc.RESPONSE_FINISH_REASONS, [result.finish_reason.value])
            if result.usage is not None:
                span.set_attribute(sc.USAGE_INPUT_TOKENS, result.usage.input_tokens)
                span.set_attribute(sc.USAGE_OUTPUT_TOKENS, result.usage.output_tokens)
                self.token_usage.record(
                    result.usage.input_tokens, {**common, sc.TOKEN_TYPE: "input"}
                )
                self.token_usage.record(
                    result.usage.output_tokens, {**common, sc.TOKEN_TYPE: "output"}
                )
            if self.capture_content:
                span.set_attribute(sc.OUTPUT_MESSAGES, _output_json(result))

    # -- execute_tool -------------------------------------------------------------------

    async def _trace_tool(self, context: FunctionInvocationContext, call_next: CallNext) -> None:
        if context.metadata.setdefault(_TRACED, self) is not self:
            await call_next()
            return
        tool = context.tool
        attributes: dict[str, Any] = {
            sc.OPERATION_NAME: "execute_tool",
            sc.TOOL_NAME: context.tool_name,
            sc.TOOL_CALL_ID: context.call_id,
            sc.TOOL_TYPE: "function",
        }
        description = getattr(tool, "description", None)
        if description:
            attributes[sc.TOOL_DESCRIPTION] = str(description)
        with self._span(f"execute_tool {context.tool_name}", SpanKind.INTERNAL, attributes) as span:
            if self.capture_content:
                span.set_attribute(sc.TOOL_CALL_ARGUMENTS, value_json(context.arguments))
            try:
                await call_next()
            except ToolApprovalPending as exc:
                span.add_event("raf.tool.approval_requested", {"raf.reason": exc.reason or ""})
                raise
            except BaseException as exc:
                _failed(span, exc)
                raise
            finally:
                for event in context.metadata.get(sc.GUARDRAIL_EVENTS_KEY, ()):
                    span.add_event(sc.GUARDRAIL_EVENT, _event_attributes(event))
            result = context.result
            error = getattr(result, "error", None)
            if error is not None:
                span.set_attribute(sc.ERROR_TYPE, "tool_error")
                span.set_status(Status(StatusCode.ERROR, str(error)))
            if self.capture_content and result is not None:
                value = error if error is not None else getattr(result, "value", result)
                span.set_attribute(sc.TOOL_CALL_RESULT, value_json(value))


def instrument(
    target: T,
    *,
    tracing: Tracing | None = None,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    capture_content: bool | None = None,
    traces: InMemoryTraces | None = None,
) -> T:
    """Trace an `Agent` or an `AgentBuilder`: the tracing middleware goes outermost, so
    its spans see every other middleware's work (guardrails included). Returns `target`."""
    if tracing is None:
        tracing = Tracing(
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            capture_content=capture_content,
            traces=traces,
        )
    from raf.agent.agent import Agent
    from raf.agent.builder import AgentBuilder

    if isinstance(target, AgentBuilder):
        target.use_middleware(*tracing.middleware.all(), outermost=True)
    elif isinstance(target, Agent):
        target.middleware = tracing.middleware + target.middleware
    else:
        raise ConfigurationError(
            f"instrument(): expected an Agent or an AgentBuilder, got {type(target).__name__}"
        )
    return target


def _agent_model(agent: Any) -> str | None:
    options = getattr(agent, "default_options", None)
    model = getattr(options, "model_id", None)
    return model or sc.client_model(getattr(agent, "leaf_client", None))


def _failed(span: Span, error: BaseException) -> str:
    """Mark the span as failed by `error`; a tripped guardrail also leaves its event."""
    kind = type(error).__name__
    span.set_attribute(sc.ERROR_TYPE, kind)
    span.set_status(Status(StatusCode.ERROR, str(error) or kind))
    span.record_exception(error)
    guardrail = getattr(error, "guardrail_event", None)
    if isinstance(guardrail, Mapping):
        span.add_event(sc.GUARDRAIL_EVENT, _event_attributes(guardrail))
    return kind


def _event_attributes(event: Mapping[str, Any]) -> dict[str, str]:
    return {f"raf.guardrail.{key}": str(value) for key, value in event.items()}


def _output_json(result: Any) -> str:
    import json

    reason = result.finish_reason.value if result.finish_reason is not None else None
    parsed = json.loads(messages_json(result.messages))
    for message in parsed:
        message["finish_reason"] = reason
    return json.dumps(parsed, ensure_ascii=False)
