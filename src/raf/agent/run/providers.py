"""The context providers' part of a run: `on_invoking` assembles what the model gets,
`on_invoked` hears how the run went, and `aclose` stops their background work."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from types import CoroutineType
from typing import Any

from raf.agent.history import is_plain_history, record_turn
from raf.agent.hooks import dynamic_instructions
from raf.agent.run.run import PHASE_PREPARED, Run
from raf.core import builders
from raf.core.context import ContextProvider, ContextResult, InjectedPart, injecting
from raf.core.errors import ProviderError, RafError
from raf.core.messages import ROLE_SYSTEM, ChatMessage
from raf.core.responses import AgentResponse
from raf.core.sessions import AgentSession
from raf.core.tools import Tool, as_tool, index_tools

log = logging.getLogger("raf.agent")


async def prepare_context(run: Run) -> None:
    """Every provider's on_invoking, then the conversation, options and tools for the
    model (the `prepare` step)."""
    agent, session, options = run.agent, run.session, run.options
    assert agent is not None and session is not None and options is not None
    request = run.request
    session.touch_request_hash(request)

    instructions: list[str] = []
    if run.instructions:
        instructions.append(run.instructions)
    if agent.instructions:
        instructions.append(agent.instructions)
    if agent.instruction_functions:
        instructions.extend(await dynamic_instructions(agent.instruction_functions, run.context))
    # what each provider injects, joined with the request into one new list at the end
    # (copying a long history once per run, not once per step)
    parts: list[Sequence[ChatMessage]] = []
    # the same, with who injected it, for providers that replace the messages
    sources: list[InjectedPart] = []
    injected: list[Tool] = []
    invoked: list[ContextProvider] = []
    for provider in agent.context_providers:
        if is_plain_history(provider):
            # what its on_invoking returns, without the coroutine: the session's
            # transcript, no instructions, no tools (it reads no other provider's parts)
            invoked.append(provider)
            if session.messages:
                parts.append(session.messages)
                sources.append(InjectedPart(provider.name, provider.kind, session.messages))
            continue
        try:
            with injecting(sources):
                result: Any = provider.on_invoking(agent, session, request, options)
                if type(result) is CoroutineType or inspect.isawaitable(result):
                    result = await result
        except BaseException as exc:
            await call_on_invoked(agent, invoked, session, request, None, exc)
            raise
        invoked.append(provider)
        if not isinstance(result, ContextResult):
            error = ProviderError(
                f"context provider {provider.name!r} ({type(provider).__name__}) returned "
                f"{type(result).__name__} from on_invoking; it must return a ContextResult"
            )
            await call_on_invoked(agent, invoked, session, request, None, error)
            raise error
        if result.instructions:
            instructions.append(result.instructions)
        if result.replace_messages:
            parts = [result.messages]
            sources = [InjectedPart(provider.name, provider.kind, result.messages)]
        elif result.messages:
            parts.append(result.messages)
            sources.append(InjectedPart(provider.name, provider.kind, result.messages))
        if result.tools:
            injected.extend(as_tool(t) for t in result.tools)
    if options.additional_instructions:
        instructions.append(options.additional_instructions)

    if not instructions:
        chat_messages = [m for part in parts for m in part] if parts else []
    elif len(parts) == 1:
        chat_messages = [builders.text_message(ROLE_SYSTEM, "\n".join(instructions)), *parts[0]]
    else:
        chat_messages = [builders.text_message(ROLE_SYSTEM, "\n".join(instructions))]
        for part in parts:
            chat_messages.extend(part)
    chat_messages.extend(request)
    run_options = options.chat_options
    indexed = agent.tool_index
    if (
        not injected
        and run_options is None
        and not agent.default_options.tools
        and indexed is not None
    ):
        # the common case: the agent's own tools, already checked and indexed at build
        tools = list(agent.tools)
        chat_options = agent.default_options.copy()
    else:
        chat_options = agent.default_options.merged(run_options)
        # the merged options already hold the agent's defaults and the run's own tools
        tools = [*agent.tools, *injected, *chat_options.tools]
        try:
            indexed = index_tools(tools, where=f"in a run of agent {agent.name!r}")
        except RafError as exc:
            await call_on_invoked(agent, invoked, session, request, None, exc)
            raise
    if run.output is not None:
        chat_options.output_schema = run.output.schema
    chat_options.tools = tools
    run.invoked = invoked
    run.conversation = chat_messages
    run.chat_options = chat_options
    run.tools = indexed
    run.phase = PHASE_PREPARED


async def call_on_invoked(
    agent: Any,
    providers: Sequence[ContextProvider],
    session: AgentSession,
    request: Sequence[ChatMessage],
    response: AgentResponse | None,
    error: BaseException | None,
) -> None:
    """Every provider's on_invoked, in reverse order; one failing does not skip others."""
    failures: list[tuple[ContextProvider, Exception]] = []
    for provider in reversed(providers):
        try:
            if is_plain_history(provider):  # its on_invoked, without the coroutine
                if response is not None:
                    record_turn(session, request, response)
                continue
            done = provider.on_invoked(agent, session, request, response, error)
            if type(done) is CoroutineType or inspect.isawaitable(done):
                await done
        except Exception as exc:
            log.error("on_invoked of provider %r failed: %s", provider.name, exc)
            failures.append((provider, exc))
    if failures and error is None:
        failed, cause = failures[0]
        raise ProviderError(
            f"on_invoked of context provider {failed.name!r} failed: {cause}"
        ) from cause


async def close_providers(providers: Sequence[ContextProvider]) -> None:
    """Close the providers that hold background work (those with an `aclose()`), last
    registered first; one failing does not skip others."""
    for provider in reversed(providers):
        close = getattr(provider, "aclose", None)
        if callable(close):
            try:
                await close()
            except Exception as exc:
                log.error("closing provider %r failed: %s", provider.name, exc)
