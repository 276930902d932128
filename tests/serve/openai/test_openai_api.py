"""The OpenAI-compatible API, with the official `openai` SDK as the client."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from raf.serve import ServeSecurity
from raf.testing import call, reply
from tests.serve.conftest import TOKEN_A, Served, start


@pytest.fixture(scope="module")
def oa_served() -> Iterator[Served]:
    yield from start(ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A]), a2a=False)


def client(served: Served, key: str = TOKEN_A) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key=key, max_retries=0, timeout=30)


def test_models_are_the_hosted_agents(oa_served: Served) -> None:
    models = client(oa_served).models.list()
    assert [m.id for m in models.data] == ["helper", "clerk", "slow"]
    assert client(oa_served).models.retrieve("clerk").owned_by == "raf"
    with pytest.raises(openai.NotFoundError):
        client(oa_served).models.retrieve("gpt-4o")


def test_a_completion_runs_the_agent_on_the_whole_conversation(oa_served: Served) -> None:
    oa_served.helper.add("Forty-two.")
    answer = client(oa_served).chat.completions.create(
        model="helper",
        messages=[
            {"role": "system", "content": "Be exact."},
            {"role": "user", "content": "What is six times seven?"},
            {"role": "assistant", "content": "Do you want the number?"},
            {"role": "user", "content": [{"type": "text", "text": "Yes."}]},
        ],
    )
    assert answer.choices[0].message.content == "Forty-two."
    assert answer.choices[0].finish_reason == "stop" and answer.model == "helper"
    sent = oa_served.helper.requests[-1].messages
    assert [m.role.value for m in sent] == ["system", "system", "user", "assistant", "user"]
    assert sent[0].text == "You answer briefly." and sent[-1].text == "Yes."


def test_a_streamed_completion_arrives_in_chunks(oa_served: Served) -> None:
    oa_served.helper.add("alpha beta gamma delta epsilon")
    stream = client(oa_served).chat.completions.create(
        model="helper",
        messages=[{"role": "user", "content": "letters"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert len(pieces) > 1 and "".join(pieces) == "alpha beta gamma delta epsilon"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop"
    # the scripted model reports no usage: the last chunk says so (null), never zeros
    assert chunks[-1].usage is None and chunks[-1].choices == []


def test_refusals_come_back_as_the_sdk_s_errors(oa_served: Served) -> None:
    with pytest.raises(openai.AuthenticationError):
        client(oa_served, key="wrong-key-0123456789").models.list()
    with pytest.raises(openai.NotFoundError) as missing:
        client(oa_served).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
        )
    assert "no model named 'gpt-4o'" in str(missing.value)
    with pytest.raises(openai.BadRequestError) as tools:
        client(oa_served).chat.completions.create(
            model="helper",
            messages=[{"role": "user", "content": "hi"}],
            tools=[{"type": "custom", "custom": {"name": "f"}}],
        )
    assert isinstance(tools.value.body, dict) and tools.value.body["param"] == "tools[0].type"
    assert "only function tools" in str(tools.value)
    with pytest.raises(openai.BadRequestError) as empty:
        client(oa_served).chat.completions.create(model="helper", messages=[])
    assert isinstance(empty.value.body, dict) and empty.value.body["param"] == "messages"


def test_an_agent_that_asks_for_approval_answers_409(oa_served: Served) -> None:
    oa_served.clerk.add(reply("", call("write_note", {"text": "x"}, call_id="o1")))
    with pytest.raises(openai.ConflictError) as paused:
        client(oa_served).chat.completions.create(
            model="clerk", messages=[{"role": "user", "content": "note x"}]
        )
    assert "write_note" in str(paused.value) and oa_served.notes == []
    oa_served.clerk.add(reply("", call("write_note", {"text": "y"}, call_id="o2")))
    stream = client(oa_served).chat.completions.create(
        model="clerk", messages=[{"role": "user", "content": "note y"}], stream=True
    )
    with pytest.raises(openai.APIError, match="needs a person's approval"):
        list(stream)
    assert oa_served.notes == []


def test_usage_is_the_runs_own_streamed_or_not(oa_served: Served) -> None:
    from raf.core.messages import ChatMessage
    from raf.core.responses import ChatResponse
    from raf.core.usage import UsageDetails

    def answer(text: str, used: int) -> ChatResponse:
        usage = UsageDetails(input_tokens=used, output_tokens=3, total_tokens=used + 3)
        return ChatResponse(messages=[ChatMessage.assistant(text)], usage=usage)

    oa_served.helper.add(answer("Hello.", 20), answer("Hi again.", 7))
    plain = client(oa_served).chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "hi"}]
    )
    assert plain.usage is not None
    assert (plain.usage.prompt_tokens, plain.usage.completion_tokens) == (20, 3)
    assert plain.usage.total_tokens == 23
    chunks = list(
        client(oa_served).chat.completions.create(
            model="helper",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    usage = chunks[-1].usage
    assert usage is not None and (usage.prompt_tokens, usage.total_tokens) == (7, 10)


def test_usage_adds_up_every_model_call_of_a_run_with_tools() -> None:
    """A run that calls a tool asks the model twice; the completion reports both calls,
    streamed or not."""
    from raf import AgentBuilder, tool
    from raf.core.usage import UsageDetails
    from raf.serve import AgentHost, create_app, serve_in_thread
    from raf.testing import ScriptedChatClient

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    used = UsageDetails(input_tokens=11, output_tokens=4, total_tokens=15)
    model = ScriptedChatClient(usage=used, chunk_size=4)
    agent = AgentBuilder("calc").with_chat_client(model).with_tool(add).build()
    app = create_app(AgentHost([agent]), ServeSecurity.for_bind("127.0.0.1"), a2a=False)
    with serve_in_thread(app) as url:
        sdk = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=30)
        for stream in (False, True):
            model.add(reply("", call("add", {"a": 1, "b": 2}, call_id="c1")), "It is 3.")
            if stream:
                chunks = list(
                    sdk.chat.completions.create(
                        model="calc",
                        messages=[{"role": "user", "content": "1 + 2?"}],
                        stream=True,
                        stream_options={"include_usage": True},
                    )
                )
                usage = chunks[-1].usage
            else:
                usage = sdk.chat.completions.create(
                    model="calc", messages=[{"role": "user", "content": "1 + 2?"}]
                ).usage
            assert usage is not None
            assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (22, 8, 30)
