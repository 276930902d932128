"""What an eval runs a case on: an agent, a workflow, a served OpenAI-compatible URL or a
plain function, each behind one call that returns an `Outcome`."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from raf.core.chat_client import ChatClient
from raf.core.messages import ChatMessage, Role
from raf.core.middleware import CallNext, ChatContext, chat_middleware
from raf.core.options import AgentRunOptions, ChatOptions
from raf.core.responses import ChatResponse
from raf.core.usage import UsageDetails
from raf.evals.case import Case


@dataclass(kw_only=True, slots=True)
class Outcome:
    """What a target produced for one case."""

    output: Any
    """The typed value when there is one, else the answer's text."""
    text: str = ""
    messages: list[ChatMessage] = field(default_factory=list)
    usage: UsageDetails | None = None
    requests: int = 0


class Target(Protocol):
    """Runs one case."""

    @property
    def name(self) -> str: ...

    async def __call__(self, case: Case) -> Outcome: ...


def _from_response(response: ChatResponse, requests: int) -> Outcome:
    value = getattr(response, "value", None)
    text = response.text
    return Outcome(
        output=value if value is not None else text,
        text=text,
        messages=list(response.messages),
        usage=response.usage,
        requests=requests or sum(1 for m in response.messages if m.role is Role.ASSISTANT),
    )


class AgentTarget:
    """A raf `Agent` (or anything with its `run(messages, options=…)`): each case in a
    new session; model calls counted by a chat middleware added for the run."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.name = str(getattr(agent, "name", "") or type(agent).__name__)

    async def __call__(self, case: Case) -> Outcome:
        from raf.agent.agent import Agent

        if not isinstance(self.agent, Agent):
            response = await self.agent.run(case.messages())
            return _from_response(response, 0)
        calls = 0

        @chat_middleware
        async def count(context: ChatContext, call_next: CallNext) -> None:
            nonlocal calls
            calls += 1
            await call_next()

        response = await self.agent.run(
            case.messages(), options=AgentRunOptions(middleware=[count])
        )
        return _from_response(response, calls)


class WorkflowTarget(AgentTarget):
    """A workflow, run through its agent form, one case at a time (a workflow runs once
    at a time)."""

    def __init__(self, workflow: Any, name: str | None = None) -> None:
        super().__init__(workflow.as_agent())
        self.name = name or str(getattr(workflow, "name", "") or "workflow")
        self._one_at_a_time = asyncio.Lock()

    async def __call__(self, case: Case) -> Outcome:
        async with self._one_at_a_time:
            return await super().__call__(case)


class FunctionTarget:
    """A plain function of the case's input (sync or async); it may return text, any
    value, or an agent response."""

    def __init__(self, function: Callable[[Any], Any], name: str | None = None) -> None:
        self.function = function
        self.name: str = name or str(getattr(function, "__name__", "function"))

    async def __call__(self, case: Case) -> Outcome:
        result = self.function(case.input)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, ChatResponse):
            return _from_response(result, 0)
        return Outcome(output=result, text=result if isinstance(result, str) else str(result))


class ChatClientTarget:
    """A chat client asked each case once, with no tools: a model on its own, or a served
    agent behind an OpenAI-compatible URL."""

    def __init__(self, client: ChatClient, name: str, options: ChatOptions | None = None) -> None:
        self.client = client
        self.name = name
        self.options = options or ChatOptions()

    async def __call__(self, case: Case) -> Outcome:
        response = await self.client.get_response(case.messages(), self.options.copy())
        return _from_response(response, 1)


class ServedTarget:
    """A served agent behind an OpenAI-compatible URL (ending in `/v1`), asked each case
    once; `model` is the name the server knows the agent by (when not given, the one
    model the server lists)."""

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
    ) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.name = f"{model}@{self.url}" if model else self.url
        self._target: ChatClientTarget | None = None
        self._lock = asyncio.Lock()

    def _only_model(self) -> str:
        import json
        import urllib.request

        request = urllib.request.Request(f"{self.url}/models")
        if self.api_key:
            request.add_header("authorization", f"Bearer {self.api_key}")
        with urllib.request.urlopen(request, timeout=min(self.timeout, 30.0)) as answer:
            listed = [m.get("id") for m in json.loads(answer.read()).get("data", [])]
        if len(listed) != 1:
            raise ValueError(
                f"{self.url} serves {len(listed)} models ({', '.join(map(str, listed))}); "
                "name one with served_target(url, model=...)"
            )
        return str(listed[0])

    async def __call__(self, case: Case) -> Outcome:
        async with self._lock:
            if self._target is None:
                from raf.clients.openai.client import OpenAIChatClient

                model = self.model
                if model is None:
                    model = await asyncio.to_thread(self._only_model)
                client = OpenAIChatClient(
                    model,
                    base_url=self.url,
                    api_key=self.api_key,
                    require_key=False,
                    timeout=self.timeout,
                )
                self._target = ChatClientTarget(client, f"{model}@{self.url}")
                self.name = self._target.name
        return await self._target(case)


def served_target(
    url: str, *, model: str | None = None, api_key: str | None = None, timeout: float = 120.0
) -> ServedTarget:
    """A served agent at an OpenAI-compatible `url` (see `ServedTarget`)."""
    return ServedTarget(url, model=model, api_key=api_key, timeout=timeout)


TargetLike = Any
"""An agent, a workflow, a URL string, a chat client, a plain function or a `Target`."""


def as_target(target: TargetLike) -> Target:
    """The `Target` for what `evaluate` was given."""
    if isinstance(target, AgentTarget | FunctionTarget | ChatClientTarget | ServedTarget):
        known: Target = target
        return known
    if isinstance(target, str):
        if target.startswith(("http://", "https://")):
            return served_target(target)
        raise ValueError(f"a string target must be an http(s) URL, got {target!r}")
    from raf.workflow.workflow import Workflow

    if isinstance(target, Workflow):
        return WorkflowTarget(target)
    if hasattr(target, "run") and inspect.iscoroutinefunction(target.run):
        return AgentTarget(target)
    if isinstance(target, ChatClient):
        return ChatClientTarget(target, type(target).__name__)
    if callable(target):
        return FunctionTarget(target)
    raise TypeError(
        f"cannot evaluate {type(target).__name__}: give an agent, a workflow, an "
        "OpenAI-compatible URL, a chat client or a function"
    )
