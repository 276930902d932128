"""A model call that fails upstream reaches a served client as the provider's name and
HTTP status on every surface (native, OpenAI chat and Responses, A2A, AG-UI, ACP, MCP),
never as the provider's URL or the body it answered; the whole error, redacted, is in
the server's log. The provider is a real loopback HTTP server that fails every call."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from raf.agent.builder import AgentBuilder
from raf.clients.openai.client import OpenAIChatClient
from raf.core.errors import ModelError
from raf.serve import AgentHost, ServeSecurity, create_app, serve_in_thread
from raf.serve.acp.agent import _acp_error
from raf.tools.mcp import McpClient
from tests.loopback_http import Recorder, loopback_server

from .sse import events

INTERNAL = "db-7.internal.corp:5432"
BODY = "quota of project acme-payroll-42 exhausted"
KEY = "sk-served-0123456789abcdefghij"
FAILED = json.dumps(
    {"error": {"message": f"upstream {INTERNAL} failed: {BODY}", "type": "server_error"}}
).encode()


@pytest.fixture(scope="module")
def provider() -> Iterator[Recorder]:
    """A provider whose every chat completion fails with a 500 that names its insides."""
    with loopback_server() as recorder:
        answer = (500, {"Content-Type": "application/json"}, FAILED)
        recorder.routes["/v1/chat/completions"] = lambda _path: answer
        yield recorder


@pytest.fixture(scope="module")
def served(provider: Recorder) -> Iterator[str]:
    model = OpenAIChatClient("gpt-test", base_url=f"{provider.url}/v1", api_key=KEY)
    agent = AgentBuilder("helper").with_chat_client(model).build()
    app = create_app(AgentHost([agent]), ServeSecurity.for_bind("127.0.0.1"))
    with serve_in_thread(app) as url:
        yield url


def hidden(text: str, provider: Recorder) -> None:
    """`text` names the provider and the status, and nothing of the URL or the body."""
    assert "openai" in text and "HTTP 500" in text, text
    port = provider.url.rsplit(":", 1)[1]
    for leak in (provider.url, f":{port}", INTERNAL, BODY, "acme-payroll", KEY, "/v1/"):
        assert leak not in text, (leak, text)


def test_the_native_api_names_provider_and_status_only(
    served: str, provider: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="raf.serve")
    with httpx.Client(base_url=served, timeout=30) as client:
        sid = client.post("/agents/helper/sessions", json={}).json()["id"]
        failed = client.post(f"/agents/helper/sessions/{sid}/runs", json={"messages": "hi"})
        assert failed.status_code == 502
        error = failed.json()["error"]
        assert error["code"] == "model_error" and error["retryable"] is True
        hidden(failed.text, provider)
        streamed = client.post(
            f"/agents/helper/sessions/{sid}/runs", json={"messages": "hi", "stream": True}
        )
        last = list(events(streamed))[-1]
        assert last[0] == "error" and last[1]["error"]["code"] == "model_error", last
        hidden(streamed.text, provider)
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "raf.serve")
    assert INTERNAL in logged and BODY in logged and f"{provider.url}/v1" in logged  # all of it
    assert KEY not in logged


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_openai_chat_api_names_provider_and_status_only(
    served: str, provider: Recorder, stream: bool
) -> None:
    body = {"model": "helper", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    answer = httpx.post(f"{served}/v1/chat/completions", json=body, timeout=30)
    if not stream:
        assert answer.status_code == 502
        assert answer.json()["error"]["type"] == "server_error"
    hidden(answer.text, provider)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_responses_api_names_provider_and_status_only(
    served: str, provider: Recorder, stream: bool
) -> None:
    body = {"model": "helper", "input": "hi", "stream": stream}
    answer = httpx.post(f"{served}/v1/responses", json=body, timeout=30)
    if not stream:
        assert answer.status_code == 502
    hidden(answer.text, provider)


def test_a2a_names_provider_and_status_only(served: str, provider: Recorder) -> None:
    message = {"kind": "message", "messageId": "m1", "role": "user"}
    message["parts"] = [{"kind": "text", "text": "hi"}]  # type: ignore[assignment]
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    answer = httpx.post(f"{served}/a2a/helper", json=body, timeout=30)
    assert answer.status_code == 200 and "model_error" in answer.text, answer.text
    hidden(answer.text, provider)


def test_ag_ui_names_provider_and_status_only(served: str, provider: Recorder) -> None:
    run = {"threadId": "t1", "runId": "r1", "messages": [{"id": "m1", "role": "user"}]}
    run["messages"][0]["content"] = "hi"  # type: ignore[index]
    answer = httpx.post(f"{served}/agui/helper", json=run, timeout=30)
    last = [data for _name, data in events(answer)][-1]
    assert (last["type"], last["code"]) == ("RUN_ERROR", "model_error"), last
    hidden(answer.text, provider)


async def test_acp_names_provider_and_status_only(provider: Recorder) -> None:
    model = OpenAIChatClient("gpt-test", base_url=f"{provider.url}/v1", api_key=KEY)
    agent = AgentBuilder("helper").with_chat_client(model).build()
    with pytest.raises(ModelError) as failed:
        await agent.run("hi")
    assert INTERNAL in str(failed.value)  # the provider's error as raf's client keeps it
    shown: Any = _acp_error(failed.value)
    hidden(f"{shown} {json.dumps(shown.data)}", provider)


async def test_mcp_names_provider_and_status_only(provider: Recorder, tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text("name: helper\ninstructions: Answer.\n")
    args = ["-m", "raf.cli", "mcp", "serve", str(tmp_path / "agent.yaml")]
    env = {
        "OPENAI_BASE_URL": f"{provider.url}/v1",
        "OPENAI_API_KEY": KEY,
        "RAF_MODEL": "openai:gpt-test",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    client = McpClient({"command": sys.executable, "args": args, "env": env})
    try:
        result = await client.call_tool("ask", {"message": "hi"})
    finally:
        await client.aclose()
    assert result.is_error
    hidden(result.content[0].text, provider)  # type: ignore[union-attr]


def test_a_durable_run_that_ended_in_a_model_error_names_its_kind_only() -> None:
    from raf.durable.runtime import DurableRunError
    from raf.serve.requests import error_for

    said = f"durable run 'r1' failed: ServerError: openai at http://{INTERNAL}/v1: {BODY}"
    error = error_for(DurableRunError(said, error_type="ServerError", run_id="r1"))
    assert (error.status, error.code) == (502, "model_error")
    assert "ServerError" in error.message and INTERNAL not in error.message
    assert BODY not in error.message
    other = error_for(DurableRunError("no durable run 'r2'", error_type="NotFound", run_id="r2"))
    assert other.code == "run_failed"
