"""A model call that fails after tools ran stores the rounds that ran, so a retry does not
run those tools again; a failure before any tool ran, or a middleware's, stores nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pytest

from raf import (
    AgentBuilder,
    AgentResponseUpdate,
    ChatMessage,
    ChatOptions,
    ContextResult,
    ModelError,
    UpdateKind,
    tool,
)
from raf.testing import ScriptedChatClient, call, reply
from raf.testing.scripted import ScriptItem
from tests.agent.helpers import RecordingProvider

RAN: list[str] = []


@tool
def send_email(to: str) -> str:
    """Send an email (not something to do twice)."""
    RAN.append(to)
    return f"sent to {to}"


class DyingSecondStream(ScriptedChatClient):
    """Streams its script, except that the second call dies after a first chunk."""

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        if len(self.requests) == 1:
            return self._die(messages, options or ChatOptions())
        return super().get_streaming_response(messages, options)

    async def _die(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[AgentResponseUpdate]:
        self._take(messages, options, stream=True)
        yield AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, text="I have sen")
        raise ModelError("connection reset by peer", retryable=True)


def _script() -> list[ScriptItem]:
    return [reply("", call("send_email", to="ann@example.org", call_id="e1")), "lost", "Sent."]


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


@pytest.mark.parametrize("stream", [False, True])
async def test_a_retry_after_the_model_failed_in_round_two_runs_no_tool_again(
    stream: bool,
) -> None:
    script = _script()
    if not stream:
        script[1] = ModelError("connection reset by peer", retryable=True)
    model = DyingSecondStream(script)
    log: list[str] = []
    provider = RecordingProvider("p", ContextResult(), log)
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tool(send_email)
        .with_context_provider(provider)
        .build()
    )
    session = agent.create_session()
    with pytest.raises(ModelError, match="connection reset"):
        if stream:
            async for _ in agent.run_stream("email Ann", session=session):
                pass
        else:
            await agent.run("email Ann", session=session)
    assert RAN == ["ann@example.org"]
    # the turn so far is stored: the request, the call and its result
    assert [m.role.value for m in session.messages] == ["user", "assistant", "tool"]
    assert session.messages[-1].function_results[0].result == "sent to ann@example.org"
    response, error = provider.invoked_with[-1]
    assert isinstance(error, ModelError) and response is not None
    # a retry continues from there: the model sees the result and the tool runs no more
    retry = await agent.run([], session=session)
    assert retry.text == "Sent." and RAN == ["ann@example.org"]
    assert model.requests[-1].messages[-1].function_results[0].call_id == "e1"


async def test_a_model_failure_before_any_tool_ran_stores_nothing() -> None:
    model = ScriptedChatClient([ModelError("overloaded", retryable=True)])
    agent = AgentBuilder().with_chat_client(model).with_tool(send_email).build()
    session = agent.create_session()
    with pytest.raises(ModelError):
        await agent.run("email Ann", session=session)
    assert session.messages == []


async def test_a_middleware_error_after_tools_ran_stores_nothing() -> None:
    from raf.core.middleware import CallNext, ChatContext

    class Refused(Exception):
        pass

    async def refuse_second(context: ChatContext, call_next: CallNext) -> None:
        if context.run.usage.requests == 1:
            raise Refused("guardrail")
        await call_next()

    model = ScriptedChatClient(_script())
    agent = AgentBuilder().with_chat_client(model).with_tool(send_email)
    built = agent.use_middleware(refuse_second).build()
    session = built.create_session()
    with pytest.raises(Refused):
        await built.run("email Ann", session=session)
    assert RAN == ["ann@example.org"] and session.messages == []
