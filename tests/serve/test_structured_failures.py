"""A structured answer that fails is the surface's error with a reason, never a 500 with
a traceback in the log: the model's answer wrong after its retries is a 502 saying why
(a deeply nested one too), a client's schema that is not valid a 400 naming the field."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from raf import AgentBuilder
from raf.serve import AgentHost, create_app, serve_in_thread
from raf.testing import ScriptedChatClient

NESTED = "[" * 50_000 + "]" * 50_000
"""An answer nested past every parser's stack."""

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@pytest.fixture
def served() -> Iterator[tuple[str, ScriptedChatClient]]:
    model = ScriptedChatClient([])
    agent = AgentBuilder().with_name("helper").with_chat_client(model).build()
    with serve_in_thread(create_app(AgentHost([agent]), a2a=False)) as url:
        yield url, model


def ask(url: str, path: str, schema: object) -> httpx.Response:
    body: dict[str, Any]
    if path == "/v1/chat/completions":
        body = {
            "model": "helper",
            "messages": [{"role": "user", "content": "hi"}],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "n", "schema": schema},
            },
        }
    else:
        body = {
            "model": "helper",
            "input": "hi",
            "store": False,
            "text": {"format": {"type": "json_schema", "name": "n", "schema": schema}},
        }
    return httpx.post(f"{url}{path}", json=body, timeout=60)


PATHS = ["/v1/chat/completions", "/v1/responses"]


@pytest.mark.parametrize("path", PATHS)
def test_a_wrong_answer_after_the_retries_is_a_502_with_the_reason(
    served: tuple[str, ScriptedChatClient], path: str, caplog: pytest.LogCaptureFixture
) -> None:
    url, model = served
    model.add(NESTED, '{"n": "seven"}')  # the first answer, and the one asked again
    with caplog.at_level(logging.WARNING):
        answer = ask(url, path, SCHEMA)
    assert answer.status_code == 502, answer.text
    error = answer.json()["error"]
    assert error["code"] is None  # OpenAI's shape: raf's own code starts the message
    assert error["message"].startswith("invalid_model_output: ")
    assert "not a valid n after 2 attempt(s)" in error["message"]
    assert "'seven' is not of type 'integer'" in error["message"]
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


@pytest.mark.parametrize("path", PATHS)
def test_a_deeply_nested_answer_is_told_to_the_model_and_then_to_the_client(
    served: tuple[str, ScriptedChatClient], path: str, caplog: pytest.LogCaptureFixture
) -> None:
    url, model = served
    model.add(NESTED, NESTED)
    with caplog.at_level(logging.WARNING):
        answer = ask(url, path, SCHEMA)
    assert answer.status_code == 502, answer.text
    assert "nested deeper than 64 levels" in answer.json()["error"]["message"]
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


@pytest.mark.parametrize("path", PATHS)
def test_a_schema_that_is_not_valid_is_a_400_naming_the_field(
    served: tuple[str, ScriptedChatClient], path: str
) -> None:
    url, _ = served
    answer = ask(url, path, {"type": "object", "properties": {"x": {"$ref": "#/properties/x"}}})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"].endswith(".schema")
    assert "refers to itself" in error["message"]
