"""OpenAI Responses background mode across two real `raf serve` processes on one SQLite
store, with the official `openai` SDK: a response started on one worker is polled,
streamed from the middle and cancelled through the other; the events read in pieces
through both workers equal the whole stream, none lost or repeated."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.serve.test_runs_fleet import WORDS, Fleet, start_fleet

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    folder: Path = tmp_path_factory.mktemp("responses-bg")
    started = start_fleet(folder, str(folder / "sessions.sqlite"), count=2)
    yield started
    started.stop()


def sdk(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=60)


def poll(client: openai.OpenAI, response_id: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = client.responses.retrieve(response_id)
        if got.status not in ("queued", "in_progress") or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def test_a_background_response_is_polled_and_resumed_through_another_worker(
    pair: Fleet,
) -> None:
    first, second = (sdk(url) for url in pair.urls)
    started = first.responses.create(model="talker", input="tell me", background=True)
    assert started.status in ("queued", "in_progress")
    seen: list[Any] = []
    with second.responses.retrieve(started.id, stream=True) as events:
        for event in events:  # the start of the stream, read on the other worker
            seen.append(event)
            if len(seen) == 6:
                break
    # the connection is gone; the rest comes from the first worker, after the last seen
    rest = list(
        first.responses.retrieve(started.id, stream=True, starting_after=seen[-1].sequence_number)
    )
    done = poll(second, started.id)
    assert done.status == "completed" and done.output_text == WORDS
    whole = list(second.responses.retrieve(started.id, stream=True))
    assert [e.model_dump() for e in seen + rest] == [e.model_dump() for e in whole]
    assert [e.sequence_number for e in whole] == list(range(len(whole)))
    assert whole[-1].type == "response.completed"


def test_a_background_response_is_cancelled_through_another_worker(pair: Fleet) -> None:
    first, second = (sdk(url) for url in pair.urls)
    started = first.responses.create(model="talker", input="tell me", background=True)
    assert second.responses.cancel(started.id).status == "cancelled"
    assert poll(first, started.id).status == "cancelled"
    events = list(first.responses.retrieve(started.id, stream=True))
    assert all(e.type != "response.completed" for e in events)
