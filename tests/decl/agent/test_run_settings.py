"""`middleware:` by registered name, `usageLimits:` and `toolTimeout:` in agent documents."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import raf.core.middleware_set as middleware_module
from raf import UsageLimitExceeded, UsageLimits, register_middleware
from raf.core.errors import ValidationProblems
from raf.core.middleware import CallNext, ChatContext
from raf.decl import DeclAgentBuilder
from raf.testing import ScriptedChatClient

SEEN: list[str] = []


async def audit(context: ChatContext, call_next: CallNext) -> None:
    SEEN.append(f"audit:{context.agent_name}")
    await call_next()


@pytest.fixture(autouse=True)
def _registry() -> Iterator[None]:
    saved = middleware_module.registered_middleware()
    SEEN.clear()
    register_middleware("audit", audit)
    yield
    middleware_module._REGISTRY.clear()
    middleware_module._REGISTRY.update(saved)


DOC = """\
name: helper
middleware: [audit, local]
usageLimits:
  requests: 3
  toolCalls: 5
  session:
    totalTokens: 1000
toolTimeout: 2.5
"""


async def test_middleware_limits_and_timeout_come_from_the_document() -> None:
    async def local(context: ChatContext, call_next: CallNext) -> None:
        SEEN.append("local")
        await call_next()

    model = ScriptedChatClient(["hello"])
    builder = DeclAgentBuilder().from_yaml_str(DOC).with_middleware("local", local)
    agent = builder.with_chat_client(model).build()
    assert (await agent.run("hi")).text == "hello"
    assert SEEN == ["audit:helper", "local"]
    assert agent.usage_limits == UsageLimits(requests=3, tool_calls=5)
    assert agent.session_usage_limits == UsageLimits(total_tokens=1000)
    assert agent.tool_timeout == 2.5


async def test_the_documents_request_limit_is_enforced() -> None:
    doc = "name: a\nusageLimits:\n  requests: 1\n  session:\n    requests: 1\n"
    agent = DeclAgentBuilder().from_yaml_str(doc).with_chat_client(ScriptedChatClient(["a", "b"]))
    built = agent.build()
    session = built.create_session()
    await built.run("one", session=session)
    with pytest.raises(UsageLimitExceeded, match="session's requests limit is 1"):
        await built.run("two", session=session)


def test_an_unknown_middleware_name_is_a_located_error_with_a_suggestion() -> None:
    doc = "name: a\nmiddleware:\n  - audit\n  - audti\n"
    builder = DeclAgentBuilder().from_yaml_str(doc).with_chat_client(ScriptedChatClient([]))
    with pytest.raises(ValidationProblems) as info:
        builder.build()
    (problem,) = info.value.problems
    assert (problem.line, problem.key_path) == (4, "middleware[1]")
    assert "no middleware is registered as 'audti'; did you mean 'audit'?" in problem.message


def test_registering_something_that_is_not_middleware_is_refused() -> None:
    from raf import ConfigurationError

    with pytest.raises(ConfigurationError, match="cannot tell which kind"):
        register_middleware("bad", lambda context, call_next: None)
    with pytest.raises(ConfigurationError, match="not callable"):
        DeclAgentBuilder().with_middleware("bad", "audit")


def test_a_replacing_client_is_not_sent_the_documents_model_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`--model` (a client in code) or RAF_MODEL replaces the document's model; the
    document's model id once stayed in the options and was sent to the new client."""
    from raf.decl import DeclAgentBuilder
    from raf.testing import ScriptedChatClient

    text = "name: a\ninstructions: hi\nmodel:\n  id: gpt-4o-mini\n  provider: openai\n"
    model = ScriptedChatClient(["ok"])
    agent = DeclAgentBuilder().from_yaml_str(text).with_chat_client(model).build()
    agent.run_sync("hi")
    assert model.requests[0].options.model_id is None
    monkeypatch.delenv("RAF_MODEL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used")  # the client is made, never called
    kept = DeclAgentBuilder().from_yaml_str(text).build()
    assert kept.default_options.model_id == "gpt-4o-mini"
