"""The local model's repetition stop: a passage written again and again ends the answer
after its first copy, and generation stops there. Fed with the loops the embedded model
really wrote on the example agents (greedy SmolLM2-135M), in llama.cpp's chunk shape."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raf.clients.local.client import LocalChatClient, LocalProvider
from raf.clients.local.repeats import SHORT_LOOP, RepeatStop
from raf.clients.local.tools import parse_constrained
from raf.clients.local.wire import LocalWire
from raf.clients.provider import ChunkStream
from raf.core.function_tool import tool
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.responses import FinishReason, UpdateKind, fold_updates

SENTENCE = "The `find_files` function is not working as expected."
LOOP = "The code is not working as expected. " + (f"{SENTENCE} {SENTENCE}\n\n" * 40)
"""What the coding assistant's answer was after its loop guard stopped a repeated call."""
DIGITS = '{"tool": "find_files", "arguments": {"pattern": "123", "path": "' + ("1234567890" * 120)
"""A call whose argument never ends (the coding assistant, asked what a function does)."""

PROSE = (
    "Tide pools are rocky hollows the sea fills twice a day. Anemones, crabs and snails "
    "live there, riding out hours of sun and wind until the water comes back.\n\n"
    "| city | country |\n|---|---|\n| Paris | France |\n| Rome | Italy |\n\n"
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    "=========\n- The capital of France is Paris.\n- The capital of Spain is Madrid.\n"
)


def pieces(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def watched(text: str, size: int = 4) -> tuple[RepeatStop, str]:
    stop = RepeatStop()
    out = "".join(stop.feed(piece) for piece in pieces(text, size))
    return stop, out + stop.flush()


def test_a_sentence_repeated_keeps_one_copy() -> None:
    stop, out = watched(LOOP)
    assert stop.looped
    assert out.count(SENTENCE) == 1
    assert out.startswith("The code is not working as expected. " + SENTENCE)
    assert len(out) < 200


MACHINE = 'The machine was called the "Tidal Tide Predicting Machine" by its builders.'
ALTERNATING = "Tide machines came from Kelvin.\n\n" + (f"{MACHINE} {MACHINE}\n\n" * 12)
"""A loop whose copies are set apart by alternating breaks (the research agent's answer)."""


def test_a_loop_with_changing_breaks_keeps_one_copy() -> None:
    stop, out = watched(ALTERNATING)
    assert stop.looped
    assert out == f"Tide machines came from Kelvin.\n\n{MACHINE}"


def test_a_loop_with_changing_breaks_in_a_constrained_answer() -> None:
    answer = json.dumps({"answer": ALTERNATING})[:-2]
    _, updates = assemble(answer, grammar=True)
    assert fold_updates(updates).text == f"Tide machines came from Kelvin.\n\n{MACHINE}"


HISTORY = (
    "The history of tide prediction is a fascinating and complex topic that spans "
    "centuries. In the 18th century, sailors and buccaneers relied on the tides to navigate "
    "their ships. They used the position of the moon and the stars to determine the "
    "direction of the wind and the direction of the ship's course."
)
PUMP = (
    "The invention of the tide-pump was a significant development in the history of tide "
    "prediction. It was invented by a Dutch ship captain named Jan van der Meer in 1717. The "
    "tide-pump was a device that used a pump to pump water from a trough to a pump that "
    "pumped water from the"
)
REPORT = "\n\n".join([HISTORY, PUMP] * 3)
"""The research pipeline's writer on the local model: its inputs, two paragraphs, copied in
turn until the token limit (a passage of some 580 characters)."""


def test_a_loop_of_two_paragraphs_keeps_one_copy() -> None:
    stop, out = watched(REPORT)
    assert stop.looped and len(stop.passage) > 320
    # the second copy of the first paragraph is kept to the end of its first sentence
    assert out == f"{HISTORY}\n\n{PUMP}\n\n{HISTORY.split('. ')[0]}."


def test_a_digit_run_is_a_loop_too() -> None:
    stop, out = watched(DIGITS)
    assert stop.looped and len(out) < DIGITS.index("1234") + SHORT_LOOP
    assert stop.passage and set(stop.passage) <= set("0123456789")


@pytest.mark.parametrize("size", [1, 3, 7, 50])
def test_prose_without_a_loop_passes_whole(size: int) -> None:
    stop, out = watched(PROSE, size)
    assert not stop.looped
    assert out == PROSE


@given(st.text(alphabet="abc .\n", max_size=300), st.integers(min_value=1, max_value=9))
def test_what_is_passed_on_is_the_text_or_its_start(text: str, size: int) -> None:
    stop, out = watched(text, size)
    assert text.startswith(out)
    assert out == (text if stop.cut is None else text[: stop.cut].rstrip())


def test_held_back_text_arrives_once_the_run_breaks() -> None:
    stop = RepeatStop()
    first = stop.feed("The answer is forty. The answer")
    assert first == "The answer is forty."  # " The answer" repeats, so it waits
    rest = stop.feed(" is two.") + stop.flush()
    assert first + rest == "The answer is forty. The answer is two."


def chunk(content: str | None = None, finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]}


def assemble(text: str, *, grammar: bool, finish: str = "length") -> tuple[Any, list[Any]]:
    """`text` in llama.cpp's chunks, cut by the token limit unless `finish` says so."""
    assembler = LocalWire(max_tokens=1024, grammar=grammar).assembler("msg_1")
    updates = []
    for piece in pieces(text):
        updates += assembler.feed(chunk(piece))
        if getattr(assembler, "stop_reading", False):
            break
    else:
        updates += assembler.feed(chunk(finish=finish))
    assert assembler.finished
    return assembler, updates + assembler.finish()


def test_the_local_assembler_stops_a_looping_answer() -> None:
    assembler, updates = assemble(LOOP, grammar=False)
    assert assembler.stop_reading
    response = fold_updates(updates)
    assert response.text.count(SENTENCE) == 1
    assert response.finish_reason is FinishReason.STOP


def test_a_looping_constrained_answer_is_closed_after_its_first_copy() -> None:
    answer = json.dumps({"answer": LOOP})[:-2]  # cut before the end, as the loop never ends
    assembler, updates = assemble(answer, grammar=True)
    assert assembler.stop_reading
    response = fold_updates(updates)
    assert response.text.count(SENTENCE) == 1
    assert response.text == response.text.rstrip()
    assert response.finish_reason is FinishReason.STOP


def test_a_looping_call_is_dropped_not_shown_as_json() -> None:
    assembler, updates = assemble(DIGITS, grammar=True)
    assert assembler.stop_reading
    response = fold_updates(updates)
    assert not [c for m in response.messages for c in m.contents]
    assert response.finish_reason is FinishReason.OTHER


def test_a_call_cut_at_the_token_limit_is_no_answer() -> None:
    contents, reason = parse_constrained('{"tool": "find_files", "arguments": {"path": "src/ap')
    assert contents == [] and reason is FinishReason.LENGTH
    contents, reason = parse_constrained('{\n  "answer": {"city": "Par')
    assert contents == [] and reason is FinishReason.LENGTH


class Endless(ChunkStream):
    """llama.cpp writing `head` once and then `tail` over and over until it is closed, as
    the greedy model did."""

    def __init__(self, head: str, tail: str, times: int | None = None) -> None:
        self.head = head
        self.tail = tail
        self.times = times
        self.chunks = 0
        self.closed = False

    def _pieces(self) -> Iterator[str]:
        yield from pieces(self.head)
        written = 0
        while self.times is None or written < self.times:
            yield from pieces(self.tail)
            written += 1

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        for piece in self._pieces():
            if self.closed:
                return
            self.chunks += 1
            if self.chunks > 5000:
                raise AssertionError("generation was never stopped")
            yield chunk(piece)
        yield chunk(finish="stop")

    async def aclose(self) -> None:
        self.closed = True


class Engine:
    template = None  # like SmolLM2's: no tool format, so tools get the grammar


class EndlessProvider(LocalProvider):
    def __init__(self, head: str, tail: str, times: int | None = None) -> None:
        super().__init__(
            Path("endless.gguf"),
            model="endless",
            n_ctx=4096,
            threads=1,
            auto_pull=False,
            verbose=False,
        )
        self.head = head
        self.tail = tail
        self.times = times
        self.streams: list[Endless] = []
        self.bodies: list[dict[str, Any]] = []

    async def load(self) -> Any:
        return Engine()

    async def open_stream(self, body: dict[str, Any]) -> ChunkStream:
        self.bodies.append(body)
        self.streams.append(Endless(self.head, self.tail, self.times))
        return self.streams[-1]


def endless_client(
    head: str, tail: str, times: int | None = None, **settings: Any
) -> tuple[LocalChatClient, EndlessProvider]:
    client = LocalChatClient("endless.gguf", auto_pull=False, **settings)
    client.api = provider = EndlessProvider(head, tail, times)
    return client, provider


async def test_a_looping_local_model_is_stopped_streaming_and_not() -> None:
    client, provider = endless_client("", f"{SENTENCE}\n")
    updates = [u async for u in client.get_streaming_response([ChatMessage.user("Review app.py")])]
    text = "".join(u.text for u in updates if u.kind is UpdateKind.TEXT_DELTA)
    assert text == SENTENCE
    assert updates[-1].kind is UpdateKind.FINISHED
    assert updates[-1].finish_reason is FinishReason.STOP
    assert provider.streams[0].closed and provider.streams[0].chunks < 40

    response = await client.get_response([ChatMessage.user("Review app.py")])
    assert response.text == SENTENCE and provider.streams[1].closed


@tool
def find_files(pattern: str, path: str) -> str:
    """Find files whose names match a pattern under a folder."""
    return "[]"


async def test_a_local_call_whose_argument_loops_ends_the_answer() -> None:
    # the one-grammar mode streams the call (the staged choice is bounded in tokens)
    client, provider = endless_client(DIGITS[:70], "1234567890", tool_mode="grammar")
    response = await client.get_response(
        [ChatMessage.user("What does add do?")], ChatOptions(tools=[find_files])
    )
    assert "json_schema" in provider.bodies[0]  # the grammar was asked for
    assert response.text == ""
    assert not [c for m in response.messages for c in m.contents]
    assert response.finish_reason is FinishReason.OTHER
    assert provider.streams[0].closed and provider.streams[0].chunks < 100


async def test_repetition_asked_for_passes_with_the_stop_off() -> None:
    client, _ = endless_client("", "I will not chew gum in class.\n", 10, stop_repeats=False)
    assert not client.stop_repeats
    response = await client.get_response([ChatMessage.user("Write the line ten times.")])
    assert response.text.count("I will not chew gum in class.") == 10
    assert response.finish_reason is FinishReason.STOP


READY = "I'm ready to assist you. What's your next question?"


def test_an_answer_that_ends_with_its_second_copy_keeps_one() -> None:
    """The research pipeline's report: the same sentence twice, then the model stopped."""
    stop, out = watched(f"{READY}\n\n{READY}")
    assert stop.looped and out == READY
    _, updates = assemble(f"{READY}\n\n{READY}", grammar=False, finish="stop")
    assert fold_updates(updates).text == READY
    _, updates = assemble(json.dumps({"answer": f"{READY} {READY}"}), grammar=True, finish="stop")
    response = fold_updates(updates)
    assert response.text == READY and response.finish_reason is FinishReason.STOP


def test_a_call_may_hold_a_passage_twice_but_not_three_times() -> None:
    line = "    assert add(2, 2) == 4\\n"
    twice = '{"tool": "write_file", "arguments": {"content": "' + line * 2 + '"}}'
    _, updates = assemble(twice, grammar=True, finish="stop")
    call = fold_updates(updates).messages[0].function_calls[0]
    assert call.arguments == {"content": "    assert add(2, 2) == 4\n" * 2}
    thrice = '{"tool": "write_file", "arguments": {"content": "' + line * 3
    assembler, updates = assemble(thrice, grammar=True)
    assert assembler.stop_reading
    assert fold_updates(updates).finish_reason is FinishReason.OTHER


def test_the_warning_comes_once_the_answer_is_out(caplog: pytest.LogCaptureFixture) -> None:
    assembler = LocalWire(max_tokens=1024, grammar=False).assembler("msg_1")
    for piece in pieces(LOOP):
        assembler.feed(chunk(piece))
        if getattr(assembler, "stop_reading", False):
            break
    assert not caplog.records  # the answer's last text is not out yet
    assembler.finish()
    assert [r.getMessage()[:32] for r in caplog.records] == ["the local model repeated itself "]
