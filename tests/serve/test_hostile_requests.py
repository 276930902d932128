"""Hostile requests against a served agent: each gets a clear 4xx with a JSON error that
names what was wrong, never a 500 or a logged traceback, and leaves nothing behind."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from raf.serve import ServeSecurity
from raf.serve.errors import OPENAI_CODES, OPENAI_STATUS_CODES

from .conftest import TOKEN_A, TOKEN_B, Served, start

JSON = {"content-type": "application/json"}
DEEP = 1000
LIMIT = 64 * 1024


@dataclass(frozen=True)
class Hostile:
    """One request and the refusal it must get."""

    method: str
    path: str
    status: int
    code: str
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    token: str | None = TOKEN_B


CORPUS: dict[str, Hostile] = {
    # a page on another local port: bodies browsers send without asking first
    "text_plain_body": Hostile(
        "POST", "/agents/helper/runs", 415, "unsupported_media_type",
        b'{"messages": "hi"}', {"content-type": "text/plain"},
    ),
    "form_body": Hostile(
        "POST", "/agents/helper/runs", 415, "unsupported_media_type",
        b"messages=hi", {"content-type": "application/x-www-form-urlencoded"},
    ),
    "multipart_body": Hostile(
        "POST", "/v1/chat/completions", 415, "unsupported_media_type",
        b"--x\r\n\r\nhi\r\n--x--", {"content-type": "multipart/form-data; boundary=x"},
    ),
    "no_type_with_body": Hostile(
        "POST", "/a2a/helper", 415, "unsupported_media_type", b'{"jsonrpc": "2.0"}'
    ),
    "browser_post_without_body": Hostile(
        "POST", "/agents/helper/sessions", 415, "unsupported_media_type",
        headers={"origin": "http://127.0.0.1:3000"},
    ),
    # parsers made to suffer
    "json_deep_arrays_native": Hostile(
        "POST", "/agents/helper/runs", 400, "json_too_deep",
        b'{"messages": ' + b"[" * DEEP + b"]" * DEEP + b"}", JSON,
    ),
    "json_deep_objects_openai": Hostile(
        "POST", "/v1/chat/completions", 400, "json_too_deep",
        b'{"a":' * DEEP + b"1" + b"}" * DEEP, JSON,
    ),
    "json_deep_a2a": Hostile(
        "POST", "/a2a/helper", 400, "json_too_deep",
        b'{"jsonrpc": "2.0", "id": 1, "params": ' + b"[" * DEEP + b"]" * DEEP + b"}", JSON,
    ),
    "json_deep_ui": Hostile(
        "POST", "/agents/helper/sessions", 400, "json_too_deep",
        b'{"session_id": ' + b"[" * DEEP + b"]" * DEEP + b"}", JSON,
    ),
    "json_huge_integer": Hostile(
        "POST", "/agents/helper/runs", 400, "malformed_json",
        b'{"messages": ' + b"9" * 5000 + b"}", JSON,
    ),
    "json_not_utf8": Hostile("POST", "/agents/helper/runs", 400, "malformed_json", b"\xff", JSON),
    "json_lone_surrogate_native": Hostile(
        "POST", "/agents/helper/runs", 400, "malformed_json", b'{"messages": "\\ud800"}', JSON
    ),
    "json_lone_surrogate_openai": Hostile(
        "POST", "/v1/chat/completions", 400, "malformed_json",
        b'{"model": "helper", "messages": [{"role": "user", "content": "\\udfff"}]}', JSON,
    ),
    "json_lone_surrogate_a2a": Hostile(
        "POST", "/a2a/helper", 400, "malformed_json",
        b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": "\\ud800"}', JSON,
    ),
    # heads
    "header_too_large": Hostile(
        "GET", "/agents", 431, "headers_too_large", headers={"x-big": "a" * 70_000}, token=None
    ),
    # sizes
    "too_large": Hostile(
        "POST", "/agents/helper/runs", 413, "body_too_large",
        b'{"messages": "' + b"x" * LIMIT + b'"}', JSON,
    ),
    # who is asking
    "no_token": Hostile("GET", "/agents", 401, "unauthorized", token=None),
    "foreign_host": Hostile(
        "GET", "/agents", 403, "host_not_allowed", headers={"host": "evil.example"}
    ),
    "foreign_origin": Hostile(
        "GET", "/agents", 403, "origin_not_allowed", headers={"origin": "https://evil.example"}
    ),
    "traversing_session_id": Hostile(
        "GET", "/agents/helper/sessions/..%2F..%2Fetc", 404, "not_found"
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def hostile_target() -> Iterator[Served]:
    """Every protocol on (A2A included), two tokens, bodies up to 64 KiB."""
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A, TOKEN_B], max_body_bytes=LIMIT)
    yield from start(security)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_a_hostile_request_is_refused_clearly(
    hostile_target: Served, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    case = CORPUS[name]
    with caplog.at_level(logging.WARNING), hostile_target.client(case.token) as client:
        answer = client.request(case.method, case.path, content=case.body, headers=case.headers)
    assert answer.status_code == case.status, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    error = answer.json()["error"]
    expected: str | None = case.code
    if case.path.startswith("/a2a/"):  # a JSON-RPC error: raf's code in its ErrorInfo
        assert isinstance(error["code"], int) and answer.json()["jsonrpc"] == "2.0"
        error = error["data"][0]["metadata"]
    elif case.path.startswith("/v1/"):  # OpenAI's shape: its own codes, null for raf's
        expected = OPENAI_STATUS_CODES.get(case.status) or (
            case.code if case.code in OPENAI_CODES else None
        )
    assert error["code"] == expected, answer.text
    assert not [r for r in caplog.records if r.exc_info], caplog.text
    with hostile_target.client(TOKEN_B) as client:
        assert client.get("/health").status_code == 200


def test_another_tokens_session_and_a_missing_one_look_alike(hostile_target: Served) -> None:
    with hostile_target.client(TOKEN_A) as alice, hostile_target.client(TOKEN_B) as bob:
        assert alice.post("/agents/helper/sessions", json={"session_id": "a-only"}).is_success
        theirs = bob.get("/agents/helper/sessions/a-only")
        missing = bob.get("/agents/helper/sessions/b-never")
        assert (theirs.status_code, missing.status_code) == (404, 404)
        assert theirs.json()["error"]["message"].replace("a-only", "ID") == missing.json()["error"][
            "message"
        ].replace("b-never", "ID")
        # creating it is not an oracle either: B's own session of that name
        assert bob.post("/agents/helper/sessions", json={"session_id": "a-only"}).status_code == 201
        assert bob.post("/agents/helper/sessions", json={"session_id": "b-new"}).status_code == 201
