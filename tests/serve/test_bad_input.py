"""Bad requests get a clear HTTP error with a JSON body, and leave sessions as they were."""

from __future__ import annotations

import pytest

from .conftest import TOKEN_A, Served


def error(response) -> str:
    assert response.headers["content-type"].startswith("application/json"), response.text
    return str(response.json()["error"]["code"])


@pytest.fixture
def session(served: Served) -> str:
    served.helper.add("first answer")
    with served.client() as client:
        sid = client.post("/agents/helper/sessions").json()["id"]
        client.post(f"/agents/helper/sessions/{sid}/runs", json={"messages": "first"})
    return str(sid)


def test_malformed_json_is_400_and_names_the_place(served: Served, session: str) -> None:
    with served.client() as client:
        before = client.get(f"/agents/helper/sessions/{session}").json()
        bad = client.post(
            f"/agents/helper/sessions/{session}/runs",
            content=b'{"messages": "hi",',
            headers={"content-type": "application/json"},
        )
        assert bad.status_code == 400 and error(bad) == "malformed_json"
        assert "line 1, column 19" in bad.json()["error"]["message"]
        empty = client.post(f"/agents/helper/sessions/{session}/runs", content=b"")
        assert empty.status_code == 400 and error(empty) == "malformed_json"
        not_utf8 = client.post(
            f"/agents/helper/sessions/{session}/runs",
            content=b"\xff\xfe",
            headers={"content-type": "application/json"},
        )
        assert not_utf8.status_code == 400 and error(not_utf8) == "malformed_json"
        assert client.get(f"/agents/helper/sessions/{session}").json() == before


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"message": "hi"}, "messages: Field required"),
        ({"messages": "hi", "extra": 1}, "extra: Extra inputs are not permitted"),
        ({"messages": []}, "give at least one message"),
        ({"messages": [{"role": "assistant", "contents": []}]}, "only user messages"),
        ({"messages": [{"contents": []}]}, "lacks its 'role'"),
        ([1, 2], "body: Input should be a valid dictionary"),
    ],
)
def test_a_body_of_the_wrong_shape_is_422(served: Served, session: str, body, says) -> None:
    with served.client() as client:
        bad = client.post(f"/agents/helper/sessions/{session}/runs", json=body)
        assert bad.status_code == 422 and error(bad) == "invalid_request"
        assert says in bad.json()["error"]["message"]
        assert len(client.get(f"/agents/helper/sessions/{session}").json()["messages"]) == 2


def test_unknown_agent_session_and_route_are_404(served: Served, session: str) -> None:
    with served.client() as client:
        agent = client.post("/agents/nobody/sessions/x/runs", json={"messages": "hi"})
        assert agent.status_code == 404 and error(agent) == "unknown_agent"
        missing = client.post("/agents/helper/sessions/nope/runs", json={"messages": "hi"})
        assert missing.status_code == 404 and error(missing) == "unknown_session"
        assert client.get("/agents/helper/sessions/nope").status_code == 404
        assert client.post("/agents/helper/sessions/nope/cancel").status_code == 404
        # a session is found only under the agent it belongs to
        other = client.get(f"/agents/clerk/sessions/{session}")
        assert other.status_code == 404 and error(other) == "unknown_session"
        route = client.get("/no/such/route")
        assert route.status_code == 404 and error(route) == "not_found"
        method = client.put("/agents")
        assert method.status_code == 405 and error(method) == "method_not_allowed"


def test_answers_for_calls_that_are_not_pending(served: Served, session: str) -> None:
    with served.client() as client:
        before = client.get(f"/agents/helper/sessions/{session}").json()
        stray = client.post(
            f"/agents/helper/sessions/{session}/approvals",
            json={"responses": [{"call_id": "zz", "approved": True}]},
        )
        assert stray.status_code == 409 and error(stray) == "approval_not_pending"
        twice = client.post(
            f"/agents/helper/sessions/{session}/approvals",
            json={
                "responses": [
                    {"call_id": "zz", "approved": True},
                    {"call_id": "zz", "approved": False},
                ]
            },
        )
        assert twice.status_code == 400 and error(twice) == "duplicate_approval"
        none = client.post(f"/agents/helper/sessions/{session}/approvals", json={"responses": []})
        assert none.status_code == 422
        assert client.get(f"/agents/helper/sessions/{session}").json() == before


def test_an_oversized_body_is_413_declared_or_chunked(guarded: Served) -> None:
    with guarded.client(TOKEN_A) as client:
        sid = client.post("/agents/helper/sessions").json()["id"]
        big = {"messages": "x" * 5000}
        declared = client.post(f"/agents/helper/sessions/{sid}/runs", json=big)
        assert declared.status_code == 413 and error(declared) == "body_too_large"

        def pieces():
            for _ in range(10):
                yield b"x" * 1000

        chunked = client.post(
            f"/agents/helper/sessions/{sid}/runs",
            content=pieces(),
            headers={"content-type": "application/json"},
        )
        assert chunked.status_code == 413 and error(chunked) == "body_too_large"
        session = client.get(f"/agents/helper/sessions/{sid}").json()
        assert session["messages"] == []
