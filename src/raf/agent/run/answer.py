"""The model's answer to a run: the bare client or the tool loop, with an output type's
answer checked and asked again while it fails. One path serves both faces: streaming, it
yields the updates as they come; not streaming, it yields none and calls the model's
non-streaming API (the fast path).

`answer` hands back the iterator to drain rather than wrapping it in one more generator
of its own: a run that does not stream then iterates only the driver's generator and the
tool loop's, each of which costs a registration with the event loop."""

from __future__ import annotations

from collections.abc import AsyncIterator

from raf.agent.run.agent_run import ANSWERED, AgentRun, agent_response
from raf.agent.run.client import drive, drive_quietly
from raf.agent.run.output import Attempts, checked
from raf.agent.run.state import LoopState
from raf.agent.run.steps import call_model
from raf.core.messages import ChatMessage
from raf.core.responses import AgentResponseUpdate, ChatResponse, ResponseFolder, UpdateKind


def answer(run: AgentRun) -> AsyncIterator[AgentResponseUpdate]:
    """The model's answer to a prepared run (`providers.prepare`), its tool loop inside,
    as the updates to drain; once drained, `answered(run)` makes it the run's response.
    With an output type, the answer is checked and asked again while it fails. (A plain
    function, not a coroutine that prepares first: each coroutine awaited costs.)"""
    if run.output is None:
        return ask(run, run.chat_messages)
    return _checked(run)


async def answer_quietly(run: AgentRun) -> None:
    """`answer` drained, for a run that does not stream: a tool loop is driven by a
    coroutine (`drive_quietly`), with no generator for the event loop to register."""
    if run.output is not None:
        async for _ in _checked(run):
            pass
        return
    loop = run.loop = loop_for(run, run.chat_messages, again=False)
    if loop is not None:
        await drive_quietly(loop)
        return
    async for _ in _bare(run, run.chat_messages):  # yields nothing when not streaming
        pass


def answered(run: AgentRun) -> None:
    """After the updates of `answer` are drained: the model's answer is the response
    (with an output type, the checked one is already there)."""
    if run.phase is not ANSWERED:
        loop = run.loop
        response = attempt(run) if loop is None else loop.response(session_id=run.session.id)
        run.response = agent_response(response, run.session)
        run.phase = ANSWERED


def attempt(run: AgentRun) -> ChatResponse:
    """The model's latest answer, its tool loop inside."""
    loop = run.loop
    if loop is not None:
        return loop.response()
    assert run.attempt is not None
    return run.attempt


async def _checked(run: AgentRun) -> AsyncIterator[AgentResponseUpdate]:
    output = run.output
    assert output is not None
    attempts = Attempts(output=output, retries=run.output_retries, conversation=run.chat_messages)

    def ask_again(conversation: list[ChatMessage]) -> AsyncIterator[AgentResponseUpdate]:
        return ask(run, conversation, again=attempts.count > 0)

    async for update in checked(attempts, ask_again, lambda: attempt(run)):
        if update.kind is UpdateKind.FINISHED:
            run.response = agent_response(attempts.joined(attempt(run)), run.session, update.value)
            run.phase = ANSWERED
        yield update


def ask(
    run: AgentRun, conversation: list[ChatMessage], *, again: bool = False
) -> AsyncIterator[AgentResponseUpdate]:
    """One answer of the model (its tool loop inside) to `conversation`; `attempt(run)`
    is that answer once the iterator is drained."""
    loop = run.loop = loop_for(run, conversation, again=again)
    if loop is not None:
        return drive(loop)
    return _bare(run, conversation)


async def _bare(
    run: AgentRun, conversation: list[ChatMessage]
) -> AsyncIterator[AgentResponseUpdate]:
    """The bare model, with no tool loop around it."""
    client = run.agent.leaf_client
    options = run.chat_options
    assert options is not None  # prepared
    if run.trail is not None:
        run.trail.append("call_model")
    if not run.stream:
        run.attempt = await client.get_response(conversation, options)
        return
    folder = ResponseFolder()
    async for update in client.get_streaming_response(conversation, options):
        folder.add(update)
        yield update
    run.attempt = folder.response()


def loop_for(run: AgentRun, conversation: list[ChatMessage], *, again: bool) -> LoopState | None:
    """The tool loop for this run; None when the bare model will do (no tools, no
    approvals, no cancellation, no limits and no chat or function middleware).
    `again`: a second answer in the same run (approvals were already applied)."""
    context = run.context
    if (
        not run.tools
        and (again or not context.approvals.responses)
        and context.cancellation is None
        and not context.has_limits
        and not context.middleware.chat
        and not context.middleware.function
    ):
        return None
    options = run.chat_options
    assert options is not None  # prepared
    loop = run.agent.tool_loop.start(
        conversation,
        options,
        run=context,
        stream=run.stream,
        max_tool_rounds=run.options.max_tool_rounds,
        tool_index=run.tool_index,
        # an output type's retries build on the conversation: the loop must not grow it
        own_messages=run.output is None,
    )
    loop.trail = run.trail
    if again:
        loop.next = call_model
    return loop
