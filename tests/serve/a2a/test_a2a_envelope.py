"""The A2A HTTP layer on a real server on loopback: the JSON-RPC envelope checked before
the params, 1.0's card and 0.3's card told apart, cards cached by ETag, the endpoint
with or without its trailing `/`, every error on the JSON-RPC URL a JSON-RPC error, and a
stream's errors as server-sent events."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from a2a.client.card_resolver import parse_agent_card

from raf.serve import ServeSecurity
from tests.serve.conftest import TOKEN_A, Served, start
from tests.serve.sse import events

pytestmark = pytest.mark.slow

CARD = "/a2a/helper/.well-known/agent-card.json"
ONLY_0_3 = {"url", "protocolVersion", "preferredTransport", "additionalInterfaces", "security"}


@pytest.fixture(scope="module")
def a2a() -> Iterator[Served]:
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A], max_body_bytes=4096)
    yield from start(security, openai=False, agui=False)


def post(served: Served, body: Any, path: str = "/a2a/helper", **headers: str) -> Any:
    with served.client(TOKEN_A, headers) as client:
        return client.post(path, json=body)


@pytest.mark.parametrize(
    "envelope",
    [
        {"jsonrpc": "aaa", "id": 1},
        {"jsonrpc": "2.0", "id": {"a": 1}},
        {"jsonrpc": "2.0", "id": [1]},
        {"jsonrpc": "2.0", "id": True},
        {"id": 1},
    ],
)
def test_a_bad_envelope_is_invalid_request_before_the_params_are_read(
    a2a: Served, envelope: dict[str, Any]
) -> None:
    body = envelope | {"method": "message/send", "params": {"message": "not a message"}}
    answer = post(a2a, body)
    assert answer.status_code == 200
    error = answer.json()["error"]
    assert error["code"] == -32600, error
    assert answer.json()["id"] in (None, 1)
    if isinstance(envelope.get("id"), dict | list | bool):
        assert answer.json()["id"] is None and '"id"' in error["message"]


def test_the_1_0_card_has_only_1_0_fields_and_0_3_clients_get_0_3_s(a2a: Served) -> None:
    with a2a.client() as client:
        new = client.get(CARD).json()
        old = client.get(CARD, headers={"A2A-Version": "0.3"}).json()
        at_old_path = client.get("/a2a/helper/.well-known/agent.json").json()
        root_old = client.get("/.well-known/agent.json").json()
    assert not ONLY_0_3 & set(new), new
    assert new["securitySchemes"] == {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}
    assert {i["protocolVersion"] for i in new["supportedInterfaces"]} == {"1.0", "0.3"}
    assert old == at_old_path == root_old
    assert old["url"].endswith("/a2a/helper") and old["protocolVersion"].startswith("0.3")
    assert old["securitySchemes"] == {"bearer": {"type": "http", "scheme": "Bearer"}}
    assert "supportedInterfaces" not in old
    # a 1.0 SDK reads either card as the same agent
    assert parse_agent_card(new).name == parse_agent_card(old).name == "helper"


def test_cards_are_cached_by_etag(a2a: Served) -> None:
    with a2a.client() as client:
        first = client.get(CARD)
        assert "max-age=" in first.headers["cache-control"]
        etag = first.headers["etag"]
        again = client.get(CARD, headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b""
        other = client.get(CARD, headers={"If-None-Match": etag, "A2A-Version": "0.3"})
        assert other.status_code == 200 and other.headers["etag"] != etag


def test_the_endpoint_answers_with_a_trailing_slash_without_a_redirect(a2a: Served) -> None:
    body = {"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"id": "nope"}}
    answer = post(a2a, body, "/a2a/helper/")
    assert answer.status_code == 200, answer.text
    assert answer.json()["id"] == 3 and answer.json()["error"]["code"] == -32001


def jsonrpc_error(answer: Any, status: int, code: int) -> str:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert body["error"]["code"] == code, body
    return str(body["error"]["message"])


def test_every_error_on_the_json_rpc_url_is_a_json_rpc_error(a2a: Served) -> None:
    with a2a.client(TOKEN_A) as client:
        plain = client.post("/a2a/helper", content=b"{}", headers={"content-type": "text/plain"})
        assert "JSON" in jsonrpc_error(plain, 415, -32005)
        big = client.post("/a2a/helper/", json={"jsonrpc": "2.0", "x": "a" * 5000})
        jsonrpc_error(big, 413, -32600)
        got = client.get("/a2a/helper")
        assert "POST" in jsonrpc_error(got, 405, -32600) and got.headers["allow"] == "POST"
        jsonrpc_error(client.post("/a2a/nobody", json={"jsonrpc": "2.0"}), 404, -32600)
    with a2a.client() as anonymous:
        jsonrpc_error(anonymous.post("/a2a/helper", json={"jsonrpc": "2.0"}), 401, -32600)


@pytest.mark.parametrize(
    ("method", "version"), [("SubscribeToTask", "1.0"), ("tasks/resubscribe", None)]
)
def test_a_re_subscribe_error_comes_as_a_server_sent_event(
    a2a: Served, method: str, version: str | None
) -> None:
    body = {"jsonrpc": "2.0", "id": 9, "method": method, "params": {"id": "nope"}}
    headers = {"A2A-Version": version} if version else {}
    with (
        a2a.client(TOKEN_A, headers) as client,
        client.stream("POST", "/a2a/helper", json=body) as answer,
    ):
        assert answer.headers["content-type"].startswith("text/event-stream")
        (only,) = [data for _, data in events(answer)]
    assert only["id"] == 9 and only["error"]["code"] == -32001
