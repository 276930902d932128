"""`guardrails:` in agent documents: input, output and tool guardrails by registered name."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import raf.agent.guardrails as guardrails_module
from raf import (
    ConfigurationError,
    GuardrailResult,
    InputGuardrailTripped,
    OutputGuardrailTripped,
    ToolGuardrail,
    register_guardrail,
    tool,
)
from raf.core.errors import ValidationProblems
from raf.core.middleware import FunctionInvocationContext
from raf.decl import DeclAgentBuilder
from raf.testing import ScriptedChatClient, call, reply


def no_secrets(text: str) -> GuardrailResult:
    return GuardrailResult.trip("secret") if "secret" in text else GuardrailResult.passed()


def refuse_all(context: FunctionInvocationContext) -> GuardrailResult:
    return GuardrailResult.trip(f"{context.tool_name} is off")


@pytest.fixture(autouse=True)
def _registry() -> Iterator[None]:
    saved = guardrails_module.registered_guardrails()
    register_guardrail("no_secrets", no_secrets)
    register_guardrail("refuse_all", ToolGuardrail(before=refuse_all))
    yield
    guardrails_module._REGISTRY.clear()
    guardrails_module._REGISTRY.update(saved)


DOC = """\
name: guarded
guardrails:
  input: [no_secrets]
  output: [local_judge]
  tools: [refuse_all]
tools:
  - kind: function
    name: clock
    description: the time
"""


def _builder(model: ScriptedChatClient) -> DeclAgentBuilder:
    def local_judge(text: str) -> GuardrailResult:
        return GuardrailResult.trip("too short") if len(text) < 3 else GuardrailResult.passed()

    @tool
    def clock() -> str:
        """The time."""
        return "noon"

    return (
        DeclAgentBuilder()
        .from_yaml_str(DOC)
        .with_guardrail("local_judge", local_judge)
        .register_factory("clock", lambda context: clock)
        .with_chat_client(model)
    )


async def test_the_documents_guardrails_guard_the_agent() -> None:
    model = ScriptedChatClient([reply("", call("clock", call_id="k1")), "It is noon.", "no"])
    agent = _builder(model).build()
    assert (await agent.run("time?")).text == "It is noon."
    (result,) = model.requests[1].messages[-1].function_results
    assert result.error == "the call was refused by guardrail 'refuse_all': clock is off"
    with pytest.raises(InputGuardrailTripped, match="secret"):
        await agent.run("a secret")
    with pytest.raises(OutputGuardrailTripped) as caught:
        await agent.run("short answer please")
    assert (caught.value.guardrail, caught.value.reason) == ("local_judge", "too short")


def test_an_unknown_or_misplaced_guardrail_is_a_located_error() -> None:
    doc = "name: a\nguardrails:\n  input: [no_secrest, refuse_all]\n  tools: [no_secrets]\n"
    builder = DeclAgentBuilder().from_yaml_str(doc).with_chat_client(ScriptedChatClient([]))
    with pytest.raises(ValidationProblems) as info:
        builder.build()
    problems = {(p.line, p.key_path): p.message for p in info.value.problems}
    assert (
        "no guardrail is registered as 'no_secrest'; did you mean 'no_secrets'?"
        in (problems[(3, "guardrails.input[0]")])
    )
    assert "is a ToolGuardrail: list it under `tools`" in problems[(3, "guardrails.input[1]")]
    assert "checks text, not tool calls" in problems[(4, "guardrails.tools[0]")]


def test_registering_something_that_cannot_guard_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="a guardrail must be a function"):
        register_guardrail("bad", 42)
    with pytest.raises(ConfigurationError, match="a guardrail must be a function"):
        DeclAgentBuilder().with_guardrail("bad", "text")
