"""Guardrails show in traces: a trip marks the run's span and leaves an event with the
reason; a tool guardrail's refusal leaves one on the tool call's span."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from raf import (
    AgentBuilder,
    GuardrailResult,
    InputGuardrailTripped,
    OutputGuardrailTripped,
    tool,
)
from raf.core.middleware import FunctionInvocationContext
from raf.observability import instrument
from raf.testing import ScriptedChatClient, call, reply


def no_secrets(text: str) -> GuardrailResult:
    if "password" in text:
        return GuardrailResult.trip("mentions a password")
    return GuardrailResult.passed()


@pytest.mark.parametrize("kind", ["input", "output"])
async def test_a_tripped_guardrail_marks_the_run_span(
    kind: str, tracer_provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedChatClient(["the password is 42"])
    builder = AgentBuilder("guarded").with_chat_client(model)
    if kind == "input":
        builder.with_input_guardrail(no_secrets)
        question = "my password?"
        error: type[Exception] = InputGuardrailTripped
    else:
        builder.with_output_guardrail(no_secrets)
        question = "what is it?"
        error = OutputGuardrailTripped
    agent = instrument(builder, tracer_provider=tracer_provider).build()
    with pytest.raises(error):
        await agent.run(question)
    spans = exporter.get_finished_spans()
    (run,) = [s for s in spans if s.name == "invoke_agent guarded"]
    assert run.status.status_code is StatusCode.ERROR
    assert (run.attributes or {})["error.type"] == error.__name__
    events = [e for e in run.events if e.name == "raf.guardrail"]
    assert len(events) == 1
    assert dict(events[0].attributes or {}) == {
        "raf.guardrail.name": "no_secrets",
        "raf.guardrail.kind": kind,
        "raf.guardrail.action": "tripped",
        "raf.guardrail.reason": "mentions a password",
    }
    chats = [s for s in spans if s.name == "chat"]
    assert len(chats) == (0 if kind == "input" else 1)


async def test_a_tool_guardrail_refusal_is_an_event_on_the_tool_span(
    tracer_provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    @tool
    def shell(command: str) -> str:
        """Run a command."""
        return "ran"

    def no_rm(context: FunctionInvocationContext) -> GuardrailResult:
        if "rm " in str(context.arguments.get("command")):
            return GuardrailResult.trip("deletes files")
        return GuardrailResult.passed()

    model = ScriptedChatClient([reply("", call("shell", command="rm -rf /", call_id="s1")), "ok"])
    agent = instrument(
        AgentBuilder().with_chat_client(model).with_tool(shell).with_tool_guardrail(before=no_rm),
        tracer_provider=tracer_provider,
    ).build()
    await agent.run("clean up")
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool shell"]
    (event,) = span.events
    assert event.name == "raf.guardrail"
    assert dict(event.attributes or {}) == {
        "raf.guardrail.name": "no_rm",
        "raf.guardrail.kind": "tool_input",
        "raf.guardrail.action": "refused",
        "raf.guardrail.reason": "deletes files",
    }
    assert span.status.status_code is StatusCode.ERROR
