"""The model's answer to a run: the bare client or the tool loop, streaming or not, with
an output type's answer checked and asked again while it fails."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from raf.agent.output_run import Attempts, answer_checked, stream_checked
from raf.agent.providers import prepare
from raf.agent.turn import PreparedRun, Turn, agent_response
from raf.agent.run import LoopState, drive, run_to_end
from raf.agent.run.steps import call_model
from raf.core.messages import ChatMessage
from raf.core.responses import (
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    ResponseFolder,
    UpdateKind,
)

if TYPE_CHECKING:
    from raf.agent.agent import Agent


async def answer(agent: Agent, turn: Turn) -> AgentResponse:
    """Providers' on_invoking, then the model (its tool loop inside), not streaming;
    with an output type, the answer is checked and asked again while it fails."""
    prepared = await prepare(agent, turn)
    response = await ask(agent, turn, prepared.chat_messages)
    value = None
    if turn.output is not None:
        response, value = await answer_checked(
            turn.output,
            turn.output_retries,
            prepared.chat_messages,
            response,
            lambda conversation: ask(agent, turn, conversation, again=True),
        )
    turn.response = agent_response(response, prepared.session, value)
    return turn.response


async def stream_answer(agent: Agent, turn: Turn) -> AsyncIterator[AgentResponseUpdate]:
    """`answer`, streaming; `turn.response` is set when the stream ends."""
    prepared = await prepare(agent, turn)
    output = turn.output
    if output is None:
        async for update in ask_stream(agent, turn, prepared.chat_messages):
            yield update
        assert turn.attempt is not None
        turn.response = agent_response(turn.attempt, prepared.session)
        return
    attempts = Attempts(
        output=output, retries=turn.output_retries, conversation=prepared.chat_messages
    )

    def ask_again(conversation: list[ChatMessage]) -> AsyncIterator[AgentResponseUpdate]:
        return ask_stream(agent, turn, conversation, again=attempts.count > 0)

    def answered() -> ChatResponse:
        assert turn.attempt is not None
        return turn.attempt

    async for update in stream_checked(attempts, ask_again, answered):
        if update.kind is UpdateKind.FINISHED:  # the session is stored before it goes
            turn.response = agent_response(
                attempts.joined(answered()), prepared.session, update.value
            )
        yield update


async def ask(
    agent: Agent, turn: Turn, conversation: list[ChatMessage], *, again: bool = False
) -> ChatResponse:
    """One answer of the model (its tool loop inside) to `conversation`."""
    prepared = turn.prepared
    assert prepared is not None
    loop = turn.loop = loop_for(agent, turn, prepared, conversation, stream=False, again=again)
    if loop is None:
        return await agent.leaf_client.get_response(conversation, prepared.chat_options)
    await run_to_end(loop)
    return loop.response()


async def ask_stream(
    agent: Agent, turn: Turn, conversation: list[ChatMessage], *, again: bool = False
) -> AsyncIterator[AgentResponseUpdate]:
    """`ask`, streaming; the answer is in `turn.attempt` when the stream ends."""
    prepared = turn.prepared
    assert prepared is not None
    loop = turn.loop = loop_for(agent, turn, prepared, conversation, stream=True, again=again)
    if loop is None:
        folder = ResponseFolder()
        async for update in agent.leaf_client.get_streaming_response(
            conversation, prepared.chat_options
        ):
            folder.add(update)
            yield update
        turn.attempt = folder.response()
    else:
        async for update in drive(loop):
            yield update
        turn.attempt = loop.response()


def loop_for(
    agent: Agent,
    turn: Turn,
    prepared: PreparedRun,
    conversation: list[ChatMessage],
    *,
    stream: bool,
    again: bool = False,
) -> LoopState | None:
    """The tool loop for this run; None when the bare model will do (no tools, no
    approvals, no cancellation, no limits and no chat or function middleware).
    `again`: a second answer in the same run (approvals were already applied)."""
    run = turn.run
    if (
        not prepared.tools
        and (again or not run.approvals.responses)
        and run.cancellation is None
        and not run.has_limits
        and not run.middleware.chat
        and not run.middleware.function
    ):
        return None
    loop = agent._tool_client.start(
        conversation,
        prepared.chat_options,
        run=run,
        stream=stream,
        max_tool_rounds=turn.options.max_tool_rounds,
        tool_index=prepared.tool_index,
        # an output type's retries build on the conversation: the loop must not grow it
        own_messages=turn.output is None,
    )
    if again:
        loop.next = call_model
    return loop
