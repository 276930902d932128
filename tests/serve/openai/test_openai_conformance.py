"""Chat completions as OpenAI answers them: answer formats, `n`, usage, errors in
OpenAI's shape and status on every `/v1` path, and streamed failures, with the official
`openai` SDK as the client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam
from pydantic import BaseModel

from raf.core.messages import ChatMessage
from raf.core.responses import ChatResponse
from raf.core.usage import UsageDetails
from raf.serve import ServeLimits, ServeSecurity
from raf.testing import call, reply
from tests.serve.conftest import TOKEN_A, Served, start

HI: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def oa_served() -> Iterator[Served]:
    yield from start(ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A]), a2a=False)


def client(served: Served, key: str = TOKEN_A) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key=key, max_retries=0, timeout=30)


def error_of(exc: openai.APIStatusError) -> dict[str, object]:
    """The `error` object of an SDK error, checked to have OpenAI's four keys."""
    body = exc.body
    assert isinstance(body, dict) and set(body) == {"message", "type", "param", "code"}, body
    return body


class City(BaseModel):
    name: str
    people: int


CITY_FORMAT: Any = {  # a raw format, as a client without the SDK's types sends it
    "type": "json_schema",
    "json_schema": {
        "name": "city",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "people": {"type": "integer"}},
            "required": ["name", "people"],
            "additionalProperties": False,
        },
    },
}


# -- answer formats ---------------------------------------------------------------------


def test_a_json_schema_format_is_the_runs_output_type(oa_served: Served) -> None:
    # the first answer does not fit: the run sends it back, as for any output type
    oa_served.helper.add("Paris, about two million", '{"name": "Paris", "people": 2100000}')
    answer = client(oa_served).chat.completions.parse(
        model="helper", messages=[{"role": "user", "content": "A city?"}], response_format=City
    )
    assert answer.choices[0].message.parsed == City(name="Paris", people=2100000)
    asked = oa_served.helper.requests[-2].options.output_schema
    assert asked is not None and asked.json_schema["required"] == ["name", "people"]
    assert "not valid JSON" in oa_served.helper.requests[-1].messages[-1].text


def test_a_structured_answer_streams_as_its_checked_json(oa_served: Served) -> None:
    oa_served.helper.add('```json\n{"name": "Oslo", "people": 700000}\n```')
    chunks = list(
        client(oa_served).chat.completions.create(
            model="helper", messages=HI, response_format=CITY_FORMAT, stream=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert json.loads(text) == {"name": "Oslo", "people": 700000}
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_a_json_object_format_asks_for_json_and_answers_an_object(oa_served: Served) -> None:
    oa_served.helper.add('```json\n{"answer": 42}\n```')
    answer = client(oa_served).chat.completions.create(
        model="helper", messages=HI, response_format={"type": "json_object"}
    )
    assert json.loads(answer.choices[0].message.content or "") == {"answer": 42}
    asked = oa_served.helper.requests[-1]
    assert asked.options.response_format == {"type": "json_object"}
    assert "one JSON object" in asked.system
    oa_served.helper.add("forty-two")
    with pytest.raises(openai.InternalServerError, match="not the JSON object asked for"):
        client(oa_served).chat.completions.create(
            model="helper", messages=HI, response_format={"type": "json_object"}
        )


def test_a_format_the_agent_cannot_take_is_a_400_saying_why(oa_served: Served) -> None:
    asked = len(oa_served.helper.requests)
    bad_schema: Any = {
        "type": "json_schema",
        "json_schema": {"name": "x", "schema": {"type": "nonsense"}},
    }
    with pytest.raises(openai.BadRequestError) as schema:
        client(oa_served).chat.completions.create(
            model="helper",
            messages=HI,
            response_format=bad_schema,
        )
    error = error_of(schema.value)
    assert error["param"] == "response_format.json_schema.schema"
    assert error["type"] == "invalid_request_error" and "not a valid JSON Schema" in str(error)
    with pytest.raises(openai.BadRequestError) as kind:
        client(oa_served).chat.completions.create(
            model="helper",
            messages=HI,
            response_format=cast(Any, {"type": "yaml"}),
        )
    assert error_of(kind.value)["param"] == "response_format.type"
    assert len(oa_served.helper.requests) == asked  # refused before the model was asked


def test_an_agent_without_a_model_of_its_own_refuses_a_format() -> None:
    from raf import AgentBuilder
    from raf.orchestrations import SequentialOrchestration
    from raf.serve import AgentHost, create_app, serve_in_thread
    from raf.testing import ScriptedChatClient

    writer = AgentBuilder("writer").with_chat_client(ScriptedChatClient(["{}"])).build()
    team = SequentialOrchestration([writer], name="team").as_agent()
    app = create_app(AgentHost([team]), ServeSecurity.for_bind("127.0.0.1"), a2a=False)
    with serve_in_thread(app) as url:
        sdk = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=30)
        with pytest.raises(openai.BadRequestError) as refused:
            sdk.chat.completions.create(
                model="team", messages=HI, response_format={"type": "json_object"}
            )
    error = error_of(refused.value)
    assert error["param"] == "response_format" and "'team'" in str(error["message"])


# -- n --------------------------------------------------------------------------------


def test_n_runs_the_agent_n_times(oa_served: Served) -> None:
    oa_served.helper.add("One.", "Two.", "Three.")
    before = len(oa_served.helper.requests)
    answer = client(oa_served).chat.completions.create(model="helper", messages=HI, n=3)
    assert [c.index for c in answer.choices] == [0, 1, 2]
    assert sorted(c.message.content or "" for c in answer.choices) == ["One.", "Three.", "Two."]
    assert len(oa_served.helper.requests) == before + 3


@pytest.mark.parametrize("n", [0, 9])
def test_n_past_what_is_served_is_a_400_naming_n(oa_served: Served, n: int) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client(oa_served).chat.completions.create(model="helper", messages=HI, n=n)
    assert error_of(refused.value)["param"] == "n"


def test_a_streamed_completion_with_several_choices_is_a_400(oa_served: Served) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client(oa_served).chat.completions.create(model="helper", messages=HI, n=2, stream=True)
    error = error_of(refused.value)
    assert error["param"] == "n" and "one choice" in str(error["message"])


# -- usage ----------------------------------------------------------------------------


def test_usage_a_model_did_not_report_is_left_out_not_zero(oa_served: Served) -> None:
    oa_served.helper.add("Hello.")
    assert client(oa_served).chat.completions.create(model="helper", messages=HI).usage is None
    used = UsageDetails(input_tokens=5, output_tokens=2, total_tokens=7)
    reported = ChatResponse(messages=[ChatMessage.assistant("Hi.")], usage=used)
    oa_served.helper.add(reported, reported)
    both = client(oa_served).chat.completions.create(model="helper", messages=HI, n=2)
    assert both.usage is not None and both.usage.total_tokens == 14


# -- streamed failures ----------------------------------------------------------------


def test_a_streamed_approval_names_the_tool_and_ends_with_done(oa_served: Served) -> None:
    oa_served.clerk.add(reply("", call("write_note", {"text": "x"}, call_id="s1")))
    body = {"model": "clerk", "messages": [{"role": "user", "content": "note"}], "stream": True}
    with oa_served.client(TOKEN_A) as http:
        answer = http.post("/v1/chat/completions", json=body)
    events = [line[len("data: ") :] for line in answer.text.splitlines() if line]
    assert events[-1] == "[DONE]"
    error = json.loads(events[-2])["error"]
    assert set(error) == {"message", "type", "param", "code"}
    # OpenAI has no code for it: null, and the message says what happened
    assert "write_note" in error["message"] and error["code"] is None
    oa_served.clerk.add(reply("", call("write_note", {"text": "y"}, call_id="s2")))
    with pytest.raises(openai.APIError, match="write_note"):
        list(
            client(oa_served).chat.completions.create(
                model="clerk", messages=[{"role": "user", "content": "note"}], stream=True
            )
        )
    assert oa_served.notes == []


# -- bad input and errors in OpenAI's shape -------------------------------------------


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": 5, "messages": HI}, "model"),
        ({"model": "helper", "messages": "hi"}, "messages"),
        ({"model": "helper", "messages": [{"content": "hi"}]}, "messages[0].role"),
        ({"model": "helper", "messages": [{"role": "user", "content": 3}]}, "messages[0].content"),
        (
            {"model": "helper", "messages": [{"role": "tool", "content": "x"}]},
            "messages[0].tool_call_id",
        ),
        ({"model": "helper", "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
        (
            {
                "model": "helper",
                "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
            },
            "messages[0].content[0].type",
        ),
        ({"model": "helper", "messages": HI, "stream": "often"}, "stream"),
        ({"model": "helper", "messages": HI, "n": "two"}, "n"),
    ],
    ids=[
        "model",
        "messages",
        "role_missing",
        "content",
        "tool_without_call",
        "unknown_role",
        "image",
        "stream",
        "n",
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    oa_served: Served, body: dict[str, object], param: str
) -> None:
    with oa_served.client(TOKEN_A) as http:
        answer = http.post("/v1/chat/completions", json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["type"], error["param"]) == ("invalid_request_error", param), error


def test_an_unknown_model_is_a_404_with_openais_fields(oa_served: Served) -> None:
    with pytest.raises(openai.NotFoundError) as missing:
        client(oa_served).chat.completions.create(model="gpt-4o", messages=HI)
    error = error_of(missing.value)
    assert (error["param"], error["code"]) == (None, "model_not_found")
    assert error["type"] == "invalid_request_error"
    with pytest.raises(openai.NotFoundError) as card:
        client(oa_served).models.retrieve("gpt-4o")
    assert (error_of(card.value)["param"], error_of(card.value)["code"]) == (
        "model",
        "model_not_found",
    )


def test_routes_not_served_answer_in_openais_shape(oa_served: Served) -> None:
    sdk = client(oa_served)
    with pytest.raises(openai.NotFoundError) as completions:
        sdk.completions.create(model="helper", prompt="hi")
    with pytest.raises(openai.NotFoundError) as embeddings:
        sdk.embeddings.create(model="helper", input="hi")
    for refused in (completions, embeddings):
        error = error_of(refused.value)
        assert (error["type"], error["param"], error["code"]) == (
            "invalid_request_error",
            None,
            None,
        )
        assert "/v1/chat/completions" in str(error["message"])
    with oa_served.client(TOKEN_A) as http:
        wrong_method = http.get("/v1/chat/completions")
    assert wrong_method.status_code == 405
    error = wrong_method.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert "POST" in wrong_method.headers["allow"] and "GET" in error["message"]


def test_auth_errors_have_openais_type_and_code(oa_served: Served) -> None:
    with pytest.raises(openai.AuthenticationError) as refused:
        client(oa_served, key="wrong-key-0123456789").chat.completions.create(
            model="helper", messages=HI
        )
    error = error_of(refused.value)
    assert (error["type"], error["param"], error["code"]) == (
        "invalid_request_error",
        None,
        "invalid_api_key",
    )


def test_limits_answer_in_openais_shape_on_v1() -> None:
    from raf.serve import AgentHost, create_app, serve_in_thread
    from tests.serve.conftest import build_agents

    limits = ServeLimits(rate_per_second=0.01, rate_burst=2, max_body_bytes=2048)
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A], limits=limits)
    agents, _models, _notes = build_agents()
    app = create_app(AgentHost(agents), security, a2a=False)
    with serve_in_thread(app) as url:
        sdk = openai.OpenAI(base_url=f"{url}/v1", api_key=TOKEN_A, max_retries=0, timeout=30)
        with pytest.raises(openai.APIStatusError) as large:
            sdk.chat.completions.create(
                model="helper", messages=[{"role": "user", "content": "x" * 4096}]
            )
        assert large.value.status_code == 413
        assert error_of(large.value)["type"] == "invalid_request_error"
        sdk.models.list()
        with pytest.raises(openai.RateLimitError) as limited:
            sdk.models.list()
        error = error_of(limited.value)
        assert (error["type"], error["code"]) == ("requests", "rate_limit_exceeded")
        assert limited.value.response.headers["retry-after"]


def test_headers_too_large_answer_in_openais_shape_on_v1(oa_served: Served) -> None:
    big = {"x-big": "a" * 70_000, "authorization": f"Bearer {TOKEN_A}"}
    for path, shape in (
        ("/v1/models", {"message", "type", "param", "code"}),
        ("/agents", {"code", "message"}),
    ):
        with httpx.Client(base_url=oa_served.url, timeout=30) as http:
            answer = http.get(path, headers=big)
        assert answer.status_code == 431
        assert set(answer.json()["error"]) == shape, (path, answer.text)


@pytest.mark.parametrize(
    ("message", "param", "code"),
    [
        ({"role": "user"}, "messages[0].content", "missing_required_parameter"),
        ({"role": "user", "content": None}, "messages.[0].content", None),
        ({"role": "user", "content": 3}, "messages[0].content", "invalid_type"),
    ],
    ids=["left_out", "null", "a_number"],
)
def test_a_message_without_content_is_refused_as_openai_refuses_it(
    oa_served: Served, message: dict[str, object], param: str, code: str | None
) -> None:
    with oa_served.client(TOKEN_A) as http:
        answer = http.post("/v1/chat/completions", json={"model": "helper", "messages": [message]})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)
