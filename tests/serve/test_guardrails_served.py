"""A tripped guardrail over HTTP: a 422 naming the guardrail and the reason, and the
stored session unchanged."""

from __future__ import annotations

import httpx

from raf import AgentBuilder, GuardrailResult
from raf.serve import AgentHost, create_app, serve_in_thread
from raf.testing import ScriptedChatClient


def no_secrets(text: str) -> GuardrailResult:
    return (
        GuardrailResult.trip("mentions a secret") if "secret" in text else GuardrailResult.passed()
    )


def test_a_tripped_guardrail_is_a_422_and_the_session_stays_as_it_was() -> None:
    model = ScriptedChatClient(["Hello.", "the secret is 42"])
    agent = (
        AgentBuilder("keeper")
        .with_chat_client(model)
        .with_input_guardrail(no_secrets)
        .with_output_guardrail(no_secrets, name="no_leaks")
        .build()
    )
    app = create_app(AgentHost([agent]), a2a=False)
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        sid = client.post("/agents/keeper/sessions").json()["id"]
        runs = f"/agents/keeper/sessions/{sid}/runs"
        assert client.post(runs, json={"messages": "hi"}).json()["text"] == "Hello."
        refused = client.post(runs, json={"messages": "tell me a secret"})
        assert refused.status_code == 422
        assert refused.json()["error"] == {
            "code": "input_guardrail_tripped",
            "message": "input guardrail 'no_secrets' tripped: mentions a secret",
            "guardrail": "no_secrets",
            "reason": "mentions a secret",
        }
        leaked = client.post(runs, json={"messages": "what is it?"})
        assert leaked.status_code == 422
        assert leaked.json()["error"]["code"] == "output_guardrail_tripped"
        assert leaked.json()["error"]["guardrail"] == "no_leaks"
        session = client.get(f"/agents/keeper/sessions/{sid}").json()
        assert [m["role"] for m in session["messages"]] == ["user", "assistant"]
