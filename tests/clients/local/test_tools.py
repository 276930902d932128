"""The constrained answer format: decoded as it streams, folded like the whole answer."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from raf.clients.local.tools import ConstrainedStream, decode_partial, tool_schema
from raf.core.contents import FunctionCallContent, TextContent
from raf.core.function_tool import tool
from raf.core.responses import AgentResponseUpdate, FinishReason, UpdateKind, fold_updates


def pieces_of(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def run(pieces: list[str], finish: str | None = "stop") -> list[AgentResponseUpdate]:
    stream = ConstrainedStream("msg_1")
    updates: list[AgentResponseUpdate] = []
    for piece in pieces:
        updates += stream.feed(piece)
    return updates + stream.finish(finish, {"prompt_tokens": 3, "completion_tokens": 4})


def test_decode_partial_waits_for_cut_escapes() -> None:
    assert decode_partial('ab\\n"', 0) == ("ab\n", 5, True)
    assert decode_partial("ab\\", 0) == ("ab", 2, False)
    assert decode_partial("\\u00e", 0) == ("", 0, False)
    assert decode_partial("\\u00e9!", 0) == ("é!", 7, False)
    assert decode_partial("\\ud83d\\ude00", 0) == ("😀", 12, False)
    assert decode_partial("\\ud83d", 0) == ("", 0, False)


@given(st.text(max_size=60), st.integers(min_value=1, max_value=7))
def test_answer_streams_in_pieces_and_folds_to_the_whole(answer: str, size: int) -> None:
    text = json.dumps({"answer": answer}, ensure_ascii=size % 2 == 0)
    streamed = run(pieces_of(text, size))
    whole = run([text])
    deltas = [u for u in streamed if u.kind is UpdateKind.TEXT_DELTA]
    assert "".join(u.text for u in deltas) == answer
    assert fold_updates(streamed).to_dict() == fold_updates(whole).to_dict()
    assert {u.message_id for u in streamed} == {"msg_1"}


def test_text_arrives_before_the_answer_ends() -> None:
    stream = ConstrainedStream("m")
    assert stream.feed('{"ans') == []
    first = stream.feed('wer": "Hel')
    assert [u.text for u in first] == ["Hel"]
    assert [u.text for u in stream.feed('lo"}')] == ["lo"]


def test_a_call_is_emitted_whole_at_the_end() -> None:
    text = '{"tool": "get_weather", "arguments": {"city": "Oslo"}}'
    updates = run(pieces_of(text, 4))
    kinds = [u.kind for u in updates]
    assert kinds == [
        UpdateKind.TOOL_CALL_STARTED,
        UpdateKind.TOOL_CALL_ARGUMENTS_DELTA,
        UpdateKind.TOOL_CALL_ENDED,
        UpdateKind.USAGE,
        UpdateKind.FINISHED,
    ]
    call = updates[2].content
    assert isinstance(call, FunctionCallContent) and call.arguments == {"city": "Oslo"}
    assert updates[-1].finish_reason is FinishReason.TOOL_CALLS


def test_a_cut_answer_keeps_its_text_and_says_length() -> None:
    updates = run(pieces_of('{"answer": "it was cut he', 5), finish="length")
    response = fold_updates(updates)
    assert response.messages[0].contents == [TextContent(text="it was cut he")]
    assert response.finish_reason is FinishReason.LENGTH


class Address(BaseModel):
    city: str
    zip: str


class Parcel(BaseModel):
    weight: float


@tool
def ship(to: Address, parcels: list[Parcel]) -> str:
    """Ship parcels to an address."""
    return "shipped"


@tool
def visit(at: Address) -> str:
    """Visit an address."""
    return "visited"


def _resolve(schema: dict[str, object], ref: str) -> object:
    assert ref.startswith("#/")
    node: object = schema
    for part in ref[2:].split("/"):
        assert isinstance(node, dict) and part in node, ref
        node = node[part]
    return node


def _refs(value: object) -> list[str]:
    if isinstance(value, dict):
        own = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return own + [r for item in value.values() for r in _refs(item)]
    if isinstance(value, list):
        return [r for item in value for r in _refs(item)]
    return []


def test_nested_model_definitions_move_to_the_root_of_the_grammar() -> None:
    # pydantic writes nested models as #/$defs/X refs; nested in anyOf they would dangle.
    assert "$defs" in ship.parameters and "$defs" in visit.parameters
    schema = tool_schema([ship, visit], None)
    refs = _refs(schema)
    assert len(refs) == 3
    for ref in refs:
        assert isinstance(_resolve(schema, ref), dict)
    ship_to = schema["anyOf"][0]["properties"]["arguments"]["properties"]["to"]["$ref"]
    visit_at = schema["anyOf"][1]["properties"]["arguments"]["properties"]["at"]["$ref"]
    assert ship_to != visit_at  # each tool keeps its own definitions
    assert "$defs" not in schema["anyOf"][0]["properties"]["arguments"]
    assert "$defs" not in tool_schema([], None)


def test_a_whole_constrained_answer_keeps_its_text() -> None:
    """Not streamed (what `Agent.run` asks for): the answer's text reaches the response."""
    from raf.clients.local.wire import LocalWire

    wire = LocalWire(max_tokens=64, grammar=True)
    whole = {
        "choices": [{"message": {"content": '{\n  "answer": "Paris"\n}'}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 5},
    }
    response = fold_updates(wire.parse(whole, "msg_1") or [])
    assert response.text == "Paris"
    assert response.finish_reason is FinishReason.STOP
