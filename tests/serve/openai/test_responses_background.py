"""OpenAI Responses background mode with the official `openai` SDK as the client, against
a real server on loopback: `responses.create(background=True)` answers at once and
`responses.retrieve` polls it to its output; `responses.cancel` stops it (`cancelled`,
and again as it is); `responses.retrieve(id, stream=True, starting_after=N)` streams
the events after `N`, none lost or repeated; bad input is a 400 (404 for another
token's response) in OpenAI's error shape. Across two worker processes on one SQLite
store: tests/serve/test_responses_background_fleet.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from raf.serve import ServeSecurity

from ..conftest import TOKEN_A, TOKEN_B, Served, start


@pytest.fixture(scope="module")
def bg_served() -> Iterator[Served]:
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A, TOKEN_B])
    yield from start(security, a2a=False)


def client(served: Served, key: str = TOKEN_A) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key=key, max_retries=0, timeout=30)


def poll(sdk: openai.OpenAI, response_id: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = sdk.responses.retrieve(response_id)
        if got.status not in ("queued", "in_progress") or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_a_background_response_answers_at_once_and_is_polled_to_its_output(
    bg_served: Served,
) -> None:
    bg_served.helper.add("Done in the background.")
    sdk = client(bg_served)
    started = sdk.responses.create(model="helper", input="Work on it.", background=True)
    assert started.status in ("queued", "in_progress"), started
    assert started.background is not False and started.output == []
    done = poll(sdk, started.id)
    assert done.status == "completed" and done.output_text == "Done in the background."
    # it continues like any kept response
    bg_served.helper.add("Still here.")
    follow = sdk.responses.create(model="helper", input="And?", previous_response_id=done.id)
    assert follow.output_text == "Still here."
    assert [m.text for m in bg_served.helper.requests[-1].messages if m.text][-3:] == [
        "Work on it.",
        "Done in the background.",
        "And?",
    ]


def test_the_stream_resumes_after_any_sequence_number_none_lost_or_repeated(
    bg_served: Served,
) -> None:
    bg_served.helper.add("one two three four five")
    sdk = client(bg_served)
    started = sdk.responses.create(model="helper", input="Count.", background=True)
    whole = list(sdk.responses.retrieve(started.id, stream=True))
    numbers = [e.sequence_number for e in whole]
    assert numbers == list(range(len(whole))), numbers
    assert whole[0].type == "response.created" and whole[-1].type == "response.completed"
    assert whole[-1].response.output_text == "one two three four five"
    for cut in (0, 3, len(whole) - 2):
        rest = list(sdk.responses.retrieve(started.id, stream=True, starting_after=cut))
        assert [e.sequence_number for e in rest] == numbers[cut + 1 :]
        assert [e.model_dump() for e in rest] == [e.model_dump() for e in whole[cut + 1 :]]


def test_a_background_stream_started_with_stream_true_is_the_same_stream(
    bg_served: Served,
) -> None:
    bg_served.helper.add("Streamed and kept.")
    sdk = client(bg_served)
    live = list(sdk.responses.create(model="helper", input="Go.", background=True, stream=True))
    assert live[-1].type == "response.completed"
    again = list(sdk.responses.retrieve(live[-1].response.id, stream=True, starting_after=-1))
    assert [e.model_dump() for e in again] == [e.model_dump() for e in live]


def test_a_cancelled_response_is_cancelled_and_cancelling_again_answers_it(
    bg_served: Served,
) -> None:
    bg_served.slow.add("Too late.")
    sdk = client(bg_served)
    started = sdk.responses.create(model="slow", input="Take your time.", background=True)
    cancelled = sdk.responses.cancel(started.id)
    assert cancelled.status == "cancelled" and cancelled.id == started.id
    assert poll(sdk, started.id).status == "cancelled"
    assert sdk.responses.cancel(started.id).status == "cancelled"
    events = list(sdk.responses.retrieve(started.id, stream=True))
    assert all(e.type != "response.completed" for e in events), events


def test_bad_background_requests_are_openai_errors(bg_served: Served) -> None:
    bg_served.helper.add("Kept.", "Plain.")
    sdk = client(bg_served)
    with pytest.raises(openai.BadRequestError) as no_store:
        sdk.responses.create(model="helper", input="x", background=True, store=False)
    assert no_store.value.body["param"] == "background"  # type: ignore[index]
    assert "store: true" in no_store.value.body["message"]  # type: ignore[index]
    started = sdk.responses.create(model="helper", input="x", background=True)
    poll(sdk, started.id)
    with pytest.raises(openai.BadRequestError) as past:
        list(sdk.responses.retrieve(started.id, stream=True, starting_after=999))
    assert past.value.body["param"] == "starting_after"  # type: ignore[index]
    with bg_served.client(TOKEN_A) as http:
        raw = http.get(
            f"/v1/responses/{started.id}", params={"stream": "true", "starting_after": "abc"}
        )
    assert raw.status_code == 400 and raw.json()["error"]["param"] == "starting_after"
    plain = sdk.responses.create(model="helper", input="y")
    with pytest.raises(openai.BadRequestError, match="background"):
        sdk.responses.cancel(plain.id)
    with pytest.raises(openai.BadRequestError, match="background"):
        list(sdk.responses.retrieve(plain.id, stream=True))
    other = client(bg_served, TOKEN_B)
    with pytest.raises(openai.NotFoundError):
        other.responses.retrieve(started.id)
    with pytest.raises(openai.NotFoundError):
        other.responses.cancel(started.id)
    with pytest.raises(openai.NotFoundError):
        list(other.responses.retrieve(started.id, stream=True))
