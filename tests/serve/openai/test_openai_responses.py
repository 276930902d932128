"""The Responses API, with the official `openai` SDK's `responses.create`,
`responses.stream`, `responses.parse` and `responses.retrieve` as the client (across
worker processes: tests/serve/test_fleet.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import openai
import pytest
from pydantic import BaseModel

from raf.core.messages import ChatMessage
from raf.core.responses import ChatResponse
from raf.core.usage import UsageDetails
from raf.serve import ServeSecurity
from raf.testing import call, reply
from tests.serve.conftest import TOKEN_A, TOKEN_B, Served, start

EVENTS = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]
"""The events of a streamed text answer, in OpenAI's order (deltas repeat)."""


@pytest.fixture(scope="module")
def rs_served() -> Iterator[Served]:
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A, TOKEN_B])
    yield from start(security, a2a=False)


def client(served: Served, key: str = TOKEN_A) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key=key, max_retries=0, timeout=30)


def error_of(exc: openai.APIStatusError) -> dict[str, object]:
    body = exc.body
    assert isinstance(body, dict) and set(body) == {"message", "type", "param", "code"}, body
    return body


def test_a_response_runs_the_agent_with_the_instructions(rs_served: Served) -> None:
    rs_served.helper.add("Forty-two.")
    answer = client(rs_served).responses.create(
        model="helper", input="Six times seven?", instructions="Answer in words."
    )
    assert answer.status == "completed" and answer.output_text == "Forty-two."
    assert answer.id.startswith("resp_") and answer.model == "helper"
    assert answer.usage is None  # the scripted model reported none: left out, not zeros
    sent = rs_served.helper.requests[-1]
    assert "You answer briefly." in sent.system and "Answer in words." in sent.system
    assert sent.messages[-1].text == "Six times seven?"


def test_message_items_are_the_conversation(rs_served: Served) -> None:
    rs_served.helper.add("Blue.")
    answer = client(rs_served).responses.create(
        model="helper",
        input=[
            {"role": "developer", "content": "Be short."},
            {"role": "user", "content": [{"type": "input_text", "text": "Sky?"}]},
            {"type": "message", "role": "assistant", "content": "Which part?"},
            {"role": "user", "content": "The colour."},
        ],
    )
    assert answer.output_text == "Blue."
    sent = rs_served.helper.requests[-1].messages
    assert [m.role.value for m in sent][-3:] == ["user", "assistant", "user"]
    assert "Be short." in rs_served.helper.requests[-1].system


def test_a_streamed_response_sends_openais_events_in_order(rs_served: Served) -> None:
    rs_served.helper.add("alpha beta gamma delta epsilon")
    with client(rs_served).responses.stream(model="helper", input="letters") as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [e.type for e in events]
    deltas = kinds.count("response.output_text.delta")
    assert deltas > 1
    assert [k for i, k in enumerate(kinds) if k != kinds[i - 1] or i == 0] == EVENTS
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert final.output_text == "alpha beta gamma delta epsilon"
    assert final.status == "completed"
    retrieved = client(rs_served).responses.retrieve(final.id)
    assert retrieved.output_text == final.output_text


def test_previous_response_id_continues_the_conversation(rs_served: Served) -> None:
    rs_served.helper.add("Hello, Ada.", "You are Ada.")
    first = client(rs_served).responses.create(model="helper", input="I am Ada.")
    second = client(rs_served).responses.create(
        model="helper", input="Who am I?", previous_response_id=first.id
    )
    assert second.previous_response_id == first.id and second.output_text == "You are Ada."
    sent = [m.text for m in rs_served.helper.requests[-1].messages if m.role.value != "system"]
    assert sent == ["I am Ada.", "Hello, Ada.", "Who am I?"]
    # an earlier response branches the conversation from it ...
    rs_served.helper.add("Hello again.", "You are Ada, still.", "Not branched twice.")
    branched = client(rs_served).responses.create(
        model="helper", input="Again?", previous_response_id=first.id
    )
    assert branched.output_text == "Hello again."
    sent = [m.text for m in rs_served.helper.requests[-1].messages if m.role.value != "system"]
    assert sent == ["I am Ada.", "Hello, Ada.", "Again?"]
    # ... leaving the branch that went on as it was: its latest response goes on there
    client(rs_served).responses.create(
        model="helper", input="Sure?", previous_response_id=second.id
    )
    sent = [m.text for m in rs_served.helper.requests[-1].messages if m.role.value != "system"]
    assert sent == ["I am Ada.", "Hello, Ada.", "Who am I?", "You are Ada.", "Sure?"]
    # and the branch goes on from its own latest response
    client(rs_served).responses.create(
        model="helper", input="And?", previous_response_id=branched.id
    )
    sent = [m.text for m in rs_served.helper.requests[-1].messages if m.role.value != "system"]
    assert sent == ["I am Ada.", "Hello, Ada.", "Again?", "Hello again.", "And?"]
    # another agent's response cannot be continued by this one
    with pytest.raises(openai.BadRequestError) as other:
        client(rs_served).responses.create(
            model="clerk", input="Hi", previous_response_id=second.id
        )
    assert error_of(other.value)["param"] == "previous_response_id"


def test_a_response_is_its_tokens_own(rs_served: Served) -> None:
    rs_served.helper.add("Mine.")
    mine = client(rs_served).responses.create(model="helper", input="hi")
    assert client(rs_served).responses.retrieve(mine.id).output_text == "Mine."
    with pytest.raises(openai.NotFoundError) as hidden:
        client(rs_served, TOKEN_B).responses.retrieve(mine.id)
    assert (error_of(hidden.value)["param"], error_of(hidden.value)["code"]) == (None, None)
    with pytest.raises(openai.NotFoundError):
        client(rs_served, TOKEN_B).responses.create(
            model="helper", input="hi", previous_response_id=mine.id
        )
    with pytest.raises(openai.NotFoundError):
        client(rs_served).responses.retrieve("resp_not-one-of-ours")
    client(rs_served).responses.delete(mine.id)
    with pytest.raises(openai.NotFoundError):
        client(rs_served).responses.retrieve(mine.id)


def test_store_false_keeps_nothing(rs_served: Served) -> None:
    rs_served.helper.add("First.", "Passing.", "Second.")
    kept = client(rs_served).responses.create(model="helper", input="one")
    records = len(asyncio.run(rs_served.host.store.list()))
    passing = client(rs_served).responses.create(
        model="helper", input="two", previous_response_id=kept.id, store=False
    )
    assert passing.output_text == "Passing." and passing.to_dict()["store"] is False
    sent = [m.text for m in rs_served.helper.requests[-1].messages if m.role.value != "system"]
    assert sent == ["one", "First.", "two"]
    assert len(asyncio.run(rs_served.host.store.list())) == records  # no session, no record
    with pytest.raises(openai.NotFoundError):
        client(rs_served).responses.retrieve(passing.id)
    with pytest.raises(openai.NotFoundError) as gone:
        client(rs_served).responses.create(
            model="helper", input="three", previous_response_id=passing.id
        )
    assert error_of(gone.value)["param"] == "previous_response_id"
    # the kept conversation did not take the unkept turn: it still goes on from `kept`
    after = client(rs_served).responses.create(
        model="helper", input="three", previous_response_id=kept.id
    )
    assert after.output_text == "Second."


def test_hosted_tools_and_other_items_are_refused(rs_served: Served) -> None:
    with pytest.raises(openai.BadRequestError) as tools:
        client(rs_served).responses.create(
            model="helper", input="hi", tools=[{"type": "web_search_preview"}]
        )
    error = error_of(tools.value)
    assert error["param"] == "tools[0].type" and "only function tools" in str(error["message"])
    with pytest.raises(openai.BadRequestError) as item:
        client(rs_served).responses.create(
            model="helper",
            input=[{"type": "image_generation_call", "id": "ig_1"}],  # type: ignore[list-item, misc]
        )
    assert error_of(item.value)["param"] == "input[0].type"
    with pytest.raises(openai.BadRequestError) as image:
        client(rs_served).responses.create(
            model="helper",
            input=[{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}],  # type: ignore[misc, list-item]
        )
    assert error_of(image.value)["param"] == "input[0].content[0].type"
    with pytest.raises(openai.BadRequestError) as model:
        client(rs_served).responses.create(model="gpt-4o", input="hi")
    assert (error_of(model.value)["param"], error_of(model.value)["code"]) == (
        "model",
        "model_not_found",
    )


def test_an_approval_fails_the_response_naming_the_tool(rs_served: Served) -> None:
    rs_served.clerk.add(reply("", call("write_note", {"text": "x"}, call_id="r1")))
    with pytest.raises(openai.ConflictError, match="write_note"):
        client(rs_served).responses.create(model="clerk", input="note x")
    rs_served.clerk.add(reply("", call("write_note", {"text": "y"}, call_id="r2")))
    events = list(client(rs_served).responses.create(model="clerk", input="note y", stream=True))
    assert [e.type for e in events] == [
        "response.created",
        "response.in_progress",
        "response.failed",
    ]
    failed = events[-1]
    assert failed.type == "response.failed" and failed.response.error is not None
    assert "write_note" in failed.response.error.message
    assert rs_served.notes == []


def test_a_text_format_is_the_runs_output_type(rs_served: Served) -> None:
    class City(BaseModel):
        name: str
        people: int

    rs_served.helper.add('{"name": "Lima", "people": 10000000}')
    parsed = client(rs_served).responses.parse(model="helper", input="A city?", text_format=City)
    assert parsed.output_parsed == City(name="Lima", people=10000000)
    assert rs_served.helper.requests[-1].options.output_schema is not None
    rs_served.helper.add('{"name": "Quito", "people": 2800000}')
    with client(rs_served).responses.stream(
        model="helper", input="Another?", text_format=City
    ) as stream:
        final = stream.get_final_response()
    assert final.output_parsed == City(name="Quito", people=2800000)
    with pytest.raises(openai.BadRequestError) as bad:
        client(rs_served).responses.create(
            model="helper",
            input="hi",
            text={"format": {"type": "json_schema", "name": "x", "schema": {"type": 3}}},
        )
    assert error_of(bad.value)["param"] == "text.format.schema"


def test_usage_the_model_reported_is_the_responses(rs_served: Served) -> None:
    used = UsageDetails(input_tokens=9, output_tokens=4, total_tokens=13)
    rs_served.helper.add(ChatResponse(messages=[ChatMessage.assistant("Hi.")], usage=used))
    answer = client(rs_served).responses.create(model="helper", input="hi")
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (9, 4)
    assert answer.usage.total_tokens == 13


def test_a_store_that_cannot_read_the_session_still_streams_response_failed() -> None:
    """The turn a record ends is read from the store; a store that fails there fails the
    response, which the client is still told of (the record not kept is logged)."""
    from types import SimpleNamespace

    from raf.core.errors import SessionError
    from raf.core.responses import AgentResponseUpdate, FinishReason, UpdateKind
    from raf.core.sessions import AgentSession
    from raf.serve.openai.chat import PLAIN
    from raf.serve.openai.responses import ResponseRun, ResponsesRequest
    from raf.serve.tenancy import Tenant
    from raf.stores.sessions import InMemorySessionStore

    class Unreadable(InMemorySessionStore):
        async def load(self, session_id: str) -> AgentSession:
            raise SessionError("the store is unreachable")

    host = SimpleNamespace(store=Unreadable())
    request = ResponsesRequest(model="helper", input="hi")
    run = ResponseRun(host=host, tenant=Tenant("a"), request=request, form=PLAIN)  # type: ignore[arg-type]
    run.session_key, run.session_id = "a/s", "s"

    async def updates() -> AsyncIterator[AgentResponseUpdate]:
        yield AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, text="Hi.")
        yield AgentResponseUpdate(kind=UpdateKind.FINISHED, finish_reason=FinishReason.STOP)

    async def events() -> list[dict[str, object]]:
        return [event async for event in run.events(updates())]

    sent = asyncio.run(events())
    assert sent[-1]["type"] == "response.failed"
    assert run.failure is not None and run.failure.status == 503
    assert run.failure.code == "session_store_error"
    assert "the session store is unavailable" in run.failure.message
    assert "the store is unreachable" not in run.failure.message  # the store's words: logged


async def test_a_continuation_is_checked_again_once_the_session_is_leased() -> None:
    """Two requests continuing one response can both pass the first look at the
    conversation; whichever takes the session's lease second finds it moved on and is
    refused, so it never runs on a conversation its client did not see."""
    from raf import AgentBuilder
    from raf.serve import AgentHost
    from raf.serve.errors import ServeError
    from raf.stores.sessions import InMemorySessionStore
    from raf.testing import ScriptedChatClient

    model = ScriptedChatClient(["first", "second", "third"])
    agent = AgentBuilder("helper").with_chat_client(model).build()
    host = AgentHost([agent], store=InMemorySessionStore())
    response, active = await host.run("helper", None, "", [ChatMessage.user("hi")])
    seen = len(response.messages) + 1  # what a client continuing this turn saw
    _, updates = await host.stream(
        "helper", active.session_id, "", [ChatMessage.user("on")], expect_messages=seen
    )
    async for _ in updates:
        pass
    with pytest.raises(ServeError) as moved:  # the same turn continued again
        await host.stream(
            "helper", active.session_id, "", [ChatMessage.user("also")], expect_messages=seen
        )
    assert moved.value.status == 409 and moved.value.code == "session_moved"
    assert len(model.requests) == 2  # the refused one never reached the model
    session = await host.session("helper", active.session_id, "")
    assert len(session.messages) == seen + 2
    _, again = await host.stream(  # its lease was given back: the latest turn goes on
        "helper", active.session_id, "", [ChatMessage.user("latest")], expect_messages=seen + 2
    )
    texts = [update.text async for update in again]
    assert "third" in "".join(texts) and len(model.requests) == 3


def test_an_unknown_if_busy_is_a_400_naming_the_field(rs_served: Served) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client(rs_served).responses.create(
            model="helper", input="hi", extra_body={"if_busy": "whenever"}
        )
    error = error_of(caught.value)
    assert error["param"] == "if_busy" and "reject, enqueue" in str(error["message"])
