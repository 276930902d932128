"""One model call of the loop, through the chat middleware; streaming or not."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable
from dataclasses import replace

from raf.agent.run.run import Run
from raf.core.contents import FunctionCallContent
from raf.core.errors import RafError, RunCancelledError
from raf.core.hand_out import hand_out, relay
from raf.core.messages import ChatMessage, new_id
from raf.core.middleware import ChatContext, run_chain
from raf.core.options import ChatOptions
from raf.core.responses import (
    KIND_FINISHED,
    KIND_USAGE,
    AgentResponseUpdate,
    ChatResponse,
    ResponseFolder,
    message_to_updates,
)


async def model_response(run: Run, options: ChatOptions) -> None:
    """Call the model with the conversation, not streaming; keep its reply in the run."""
    chain = run.context.middleware.chat
    if not chain:
        # what `_model_call` does, inline: one coroutine fewer per model call
        try:
            call = run.client.get_response(run.conversation, options)
            response: ChatResponse = await (
                call if run.context.cancellation is None else run.race(call)
            )
        except RunCancelledError:
            raise
        except Exception as exc:
            run.model_error = exc
            raise
        _accept(run, response)
        return
    # copies: a middleware's change applies to this call, not to the rest of the run
    context = ChatContext(
        run=run.context, messages=list(run.conversation), options=replace(options)
    )

    async def answer(ctx: ChatContext) -> None:
        ctx.result = await _model_call(run, ctx.messages, ctx.options)

    await run_chain(chain, context, answer)
    _accept(run, _result_of(context))


def model_updates(run: Run, options: ChatOptions) -> Awaitable[None]:
    """Call the model with the conversation, streaming: hand its deltas out
    (`raf.core.hand_out.relay`) as they come and keep its reply in the run at the end."""
    if not run.context.middleware.chat:  # the model's own stream, with no layer between
        return relay(_leaf_stream(run, run.conversation, options, None))
    return _chained_updates(run, options)


async def _chained_updates(run: Run, options: ChatOptions) -> None:
    chain = run.context.middleware.chat
    context = ChatContext(
        run=run.context, messages=list(run.conversation), options=replace(options), stream=True
    )
    streamed = False

    async def answer(ctx: ChatContext) -> None:
        nonlocal streamed
        streamed = True
        folder = ResponseFolder()
        await relay(_leaf_stream(run, ctx.messages, ctx.options, folder))
        ctx.result = folder.response()

    # the deltas leave as they come, straight from the model's stream to the caller,
    # while the chain waits at the relay (it runs in the pump's task: no task and no
    # queue between; an error of the stream is raised in the chain, at `call_next`)
    await run_chain(chain, context, answer)
    result = _result_of(context)
    if not streamed:  # short-circuited: the middleware's messages stream as whole updates
        rename_reused_calls(result.messages, run.context.approvals.spent)
        for message in result.messages:
            message.message_id = message.message_id or new_id("msg")
            for update in message_to_updates(message, message.message_id):
                await hand_out(update)
    _accept(run, result)


async def _model_call(run: Run, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse:
    try:
        call = run.client.get_response(messages, options)
        # no token: no race, so no wrapper coroutine per model call
        response: ChatResponse = await (
            call if run.context.cancellation is None else run.race(call)
        )
    except RunCancelledError:
        raise
    except Exception as exc:
        run.model_error = exc
        raise
    return response


def _result_of(context: ChatContext) -> ChatResponse:
    if context.result is None:
        raise RafError(
            "a chat middleware returned without a result: call call_next() or set result"
        )
    return context.result


def rename_reused_calls(messages: list[ChatMessage], spent: list[str]) -> None:
    """Give a fresh id to each call that reuses the id of a call whose approval was spent,
    so an old approval never answers it and the transcript's ids stay unique."""
    if not spent:
        return
    for message in messages:
        if any(c.call_id in spent for c in message.function_calls):
            message.contents = [
                replace(c, call_id=new_id("call"))
                if isinstance(c, FunctionCallContent) and c.call_id in spent
                else c
                for c in message.contents
            ]


def _reuses(update: AgentResponseUpdate, spent: list[str]) -> bool:
    content = update.content
    return update.call_id in spent or (
        isinstance(content, FunctionCallContent) and content.call_id in spent
    )


def _renamed(update: AgentResponseUpdate, fresh: dict[str, str]) -> AgentResponseUpdate:
    """`update` with a reused call id replaced by this stream's fresh one for it."""
    content = update.content
    old = update.call_id or (content.call_id if isinstance(content, FunctionCallContent) else "")
    new = fresh.setdefault(old, new_id("call"))
    if isinstance(content, FunctionCallContent) and content.call_id == old:
        content = replace(content, call_id=new)
    return replace(update, call_id=new if update.call_id else "", content=content)


def _accept(run: Run, response: ChatResponse) -> None:
    messages = response.messages
    spent = run.context.approvals.spent
    if spent:
        rename_reused_calls(messages, spent)
    for message in messages:
        if message.message_id is None:
            message.message_id = new_id("msg")
    if response.usage is not None or response.model_id:
        run.account(response.usage, response.model_id)
    run.finish_reason = response.finish_reason
    run.context.count_request(response.usage)
    run.keep(response.messages)


async def _leaf_stream(
    run: Run,
    messages: list[ChatMessage],
    options: ChatOptions,
    folder: ResponseFolder | None,
) -> AsyncIterator[AgentResponseUpdate]:
    """The model's stream, each delta as it comes (relayed to the caller); with no
    `folder`, the folded reply goes straight to the run."""
    own = folder is None
    folder = folder if folder is not None else ResponseFolder()
    message_id = new_id("msg")
    spent = run.context.approvals.spent
    fresh: dict[str, str] = {}  # reused call id → the id every update of it carries
    stream = run.client.get_streaming_response(messages, options)
    token = run.context.cancellation
    try:
        while True:
            try:
                # With a token, each chunk is awaited against it, so a stalled model
                # cannot hold a cancelled run.
                update = await (anext(stream) if token is None else run.race(anext(stream)))
            except StopAsyncIteration:
                break
            if token is not None and token.cancelled:
                raise RunCancelledError("cancelled")
            kind = update.kind
            if not update.message_id and kind is not KIND_USAGE and kind is not KIND_FINISHED:
                update = replace(update, message_id=message_id)
            if spent and _reuses(update, spent):
                update = _renamed(update, fresh)
            folder.add(update)
            if kind is KIND_FINISHED or kind is KIND_USAGE:
                continue  # the loop sums usage and sends its own final update
            yield update
    except BaseException as exc:
        if isinstance(exc, Exception) and not isinstance(exc, RunCancelledError):
            run.model_error = exc
        close = getattr(stream, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):  # the first error is the one to report
                await close()
        raise
    if folder.model_id is None:
        # a client that does not name its model in the stream: the one asked for
        asked = options.model_id or getattr(run.client, "model", None)
        folder.model_id = asked if isinstance(asked, str) and asked else None
    if own:
        _accept(run, folder.response())
