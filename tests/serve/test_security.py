"""Tokens, Host and Origin checks, and the refusal to serve beyond loopback without a token."""

from __future__ import annotations

import pytest

from raf.core.errors import ConfigurationError
from raf.serve import ServeSecurity

from .conftest import TOKEN_A, TOKEN_B, Served


def test_requests_without_a_valid_token_are_refused(guarded: Served) -> None:
    with guarded.client() as anonymous:
        refused = anonymous.get("/agents")
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")
        assert refused.json()["error"]["code"] == "unauthorized"
        assert anonymous.get("/health").status_code == 200
        assert anonymous.get("/ready").status_code == 200
    for header in ("Bearer wrong-token-0123456789", f"Basic {TOKEN_A}", "Bearer", TOKEN_A):
        with guarded.client(headers={"authorization": header}) as client:
            assert client.get("/agents").status_code == 401, header
    with guarded.client(TOKEN_A) as client:
        assert client.get("/agents").status_code == 200


def test_a_session_is_never_visible_to_another_token(guarded: Served) -> None:
    guarded.helper.add("for A only")
    with guarded.client(TOKEN_A) as alice, guarded.client(TOKEN_B) as bob:
        sid = alice.post("/agents/helper/sessions").json()["id"]
        alice.post(f"/agents/helper/sessions/{sid}/runs", json={"messages": "secret"})
        before = alice.get(f"/agents/helper/sessions/{sid}").json()
        for response in (
            bob.get(f"/agents/helper/sessions/{sid}"),
            bob.post(f"/agents/helper/sessions/{sid}/runs", json={"messages": "peek"}),
            bob.post(
                f"/agents/helper/sessions/{sid}/approvals",
                json={"responses": [{"call_id": "x", "approved": True}]},
            ),
            bob.post(f"/agents/helper/sessions/{sid}/cancel"),
            bob.delete(f"/agents/helper/sessions/{sid}"),
        ):
            assert response.status_code == 404, response.text
            assert response.json()["error"]["code"] == "unknown_session"
            assert "secret" not in response.text
        assert alice.get(f"/agents/helper/sessions/{sid}").json() == before


def test_a_session_id_says_nothing_about_other_tokens_sessions(guarded: Served) -> None:
    guarded.helper.add("A's answer")
    guarded.helper.add("B's answer")
    with guarded.client(TOKEN_A) as alice, guarded.client(TOKEN_B) as bob:
        made = alice.post("/agents/helper/sessions", json={"session_id": "shared-name"})
        assert made.status_code == 201
        alice.post("/agents/helper/sessions/shared-name/runs", json={"messages": "A's secret"})
        # B choosing the same id gets a session of its own, as for a free id: no oracle
        ours = bob.post("/agents/helper/sessions", json={"session_id": "shared-name"})
        assert ours.status_code == 201, ours.text
        assert ours.json()["id"] == "shared-name" and ours.json()["messages"] == []
        ran = bob.post("/agents/helper/sessions/shared-name/runs", json={"messages": "B's"})
        assert ran.json()["text"] == "B's answer"
        assert ran.json()["session_id"] == "shared-name"
        again = bob.post("/agents/helper/sessions", json={"session_id": "shared-name"})
        assert again.status_code == 409  # its own session exists: that it may be told
        theirs = alice.get("/agents/helper/sessions/shared-name").json()
        assert "A's secret" in str(theirs) and "B's" not in str(theirs)
        assert theirs["id"] == "shared-name"
        assert len(bob.get("/agents/helper/sessions/shared-name").json()["messages"]) == 2
        # one rule for the id, whoever holds which: too long for a scoped key is a 400
        long_id = "x" * 128
        assert bob.post("/agents/helper/sessions", json={"session_id": long_id}).status_code == 400
        bob.delete("/agents/helper/sessions/shared-name")
        assert alice.get("/agents/helper/sessions/shared-name").status_code == 200


def test_a_foreign_host_or_origin_is_refused(served: Served) -> None:
    with served.client() as client:
        rebound = client.get("/agents", headers={"host": "evil.example:8000"})
        assert rebound.status_code == 403
        assert rebound.json()["error"]["code"] == "host_not_allowed"
        assert client.get("/agents", headers={"host": "localhost:8000"}).status_code == 200
        assert client.get("/agents", headers={"host": "[::1]:8000"}).status_code == 200
        cross = client.get("/agents", headers={"origin": "https://evil.example"})
        assert cross.status_code == 403
        assert cross.json()["error"]["code"] == "origin_not_allowed"
        local = client.get("/agents", headers={"origin": "http://localhost:3000"})
        assert local.status_code == 200


def test_serving_beyond_loopback_needs_a_token() -> None:
    with pytest.raises(ConfigurationError, match="without a bearer token"):
        ServeSecurity.for_bind("0.0.0.0")
    with pytest.raises(ConfigurationError, match="at least 16 characters"):
        ServeSecurity.for_bind("0.0.0.0", tokens=["short"])
    open_wide = ServeSecurity.for_bind("0.0.0.0", tokens=[TOKEN_A])
    assert open_wide.host_allowed("agents.example.com")
    assert not open_wide.origin_allowed("http://localhost:3000")
    assert open_wide.owner(f"Bearer {TOKEN_A}") not in (None, "")
    pinned = ServeSecurity.for_bind(
        "10.0.0.5",
        tokens=[TOKEN_A],
        allowed_hosts=["agents.example.com"],
        allowed_origins=["https://app.example.com/"],
    )
    assert pinned.host_allowed("agents.example.com:443")
    assert not pinned.host_allowed("10.0.0.5")
    assert pinned.origin_allowed("https://app.example.com")
    loopback = ServeSecurity.for_bind("127.0.0.1")
    assert loopback.owner(None) == "" and not loopback.host_allowed(None)


def test_one_loopback_test_for_both_guards_and_app_localhost_is_not_loopback() -> None:
    """`raf mcp serve` is guarded by `raf serve`'s own rules (one `is_loopback`, no check
    of its own); a name under `.localhost` is not loopback to either (a resolver that sends
    it to DNS may get a public address), so neither serves on it without a token nor takes
    it as a Host unasked."""
    from raf.serve.mcp import guard
    from raf.serve.security import is_loopback

    assert "is_loopback" not in vars(guard)
    assert isinstance(guard.mcp_security("127.0.0.1"), ServeSecurity)
    assert is_loopback("localhost") and is_loopback(" LocalHost ") and is_loopback("[::1]")
    assert not is_loopback("app.localhost") and not is_loopback("localhost.example.com")
    with pytest.raises(ConfigurationError, match="without a bearer token"):
        ServeSecurity.for_bind("app.localhost")
    with pytest.raises(ConfigurationError, match="without a bearer token"):
        guard.mcp_security("app.localhost")
    local = ServeSecurity.for_bind("127.0.0.1")
    assert local.host_allowed("localhost:8000") and not local.host_allowed("app.localhost:8000")
    named = ServeSecurity.for_bind("127.0.0.1", allowed_hosts=["app.localhost"])
    assert named.host_allowed("app.localhost:8000")
