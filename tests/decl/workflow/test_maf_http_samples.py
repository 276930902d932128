"""Microsoft Agent Framework's HttpRequestAction samples run end to end: their URLs name
api.github.com, so a host `HttpRequestHandler` forwards each request to a loopback
server of the test that answers as the GitHub API would for that call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from raf import AgentBuilder
from raf.decl.workflow import DeclWorkflowBuilder, HttpReply, HttpRequest
from raf.testing import ScriptedChatClient
from raf.workflow import WorkflowRunError
from tests.decl.workflow.helpers import variables
from tests.loopback_http import Recorder, loopback_server

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "maf-samples" / "python"
HTTP_FIXTURE = SAMPLES / "packages" / "declarative" / "tests" / "workflows" / "http_request.yaml"
HTTP_SAMPLE = SAMPLES / "samples" / "03-workflows" / "declarative" / "invoke_http_request"

GITHUB = "https://api.github.com"
RUNTIME_REPO = {"id": 210716005, "full_name": "dotnet/runtime", "stargazers_count": 16234}
AF_REPO = {"full_name": "microsoft/agent-framework", "open_issues_count": 412, "forks": 900}


class Forwarder:
    """An `HttpRequestHandler` that sends GitHub API requests to the loopback server and
    keeps what it was asked."""

    def __init__(self, server: Recorder) -> None:
        self.server = server
        self.seen: list[HttpRequest] = []

    async def __call__(self, request: HttpRequest) -> HttpReply:
        self.seen.append(request)
        assert request.url.startswith(GITHUB + "/"), request.url
        local = self.server.url + request.url[len(GITHUB) :]
        async with httpx.AsyncClient(timeout=request.timeout) as client:
            reply = await client.request(
                request.method, local, headers=dict(request.headers), content=request.body
            )
        return HttpReply(
            status=reply.status_code,
            headers={k.decode(): v.decode() for k, v in reply.headers.raw},
            body=reply.content,
        )


@pytest.fixture
def github() -> Iterator[Recorder]:
    with loopback_server() as server:
        body = json.dumps(RUNTIME_REPO).encode()
        server.routes["/repos/dotnet/runtime"] = lambda _p: (
            200,
            {"Content-Type": "application/json; charset=utf-8", "X-GitHub-Api-Version": "2022"},
            body,
        )
        server.json("/repos/microsoft/agent-framework", AF_REPO)
        yield server


async def test_http_request_fixture_stores_the_reply_and_its_headers(github: Recorder) -> None:
    forward = Forwarder(github)
    workflow = DeclWorkflowBuilder().from_file(HTTP_FIXTURE).with_http_handler(forward).build()
    result = await workflow.run("go")
    assert result.status == "completed"
    (request,) = forward.seen
    assert request.method == "GET"
    assert request.url == "https://api.github.com/repos/dotnet/runtime"
    assert request.headers["Accept"] == "application/vnd.github+json"
    assert request.headers["User-Agent"] == "agent-framework-integration-test"
    assert request.body is None
    assert github.paths == ["/repos/dotnet/runtime"]  # the request reached the server
    local = variables(workflow)["Local"]
    assert local["RepoOwner"] == "dotnet"
    assert local["RepoInfo"] == RUNTIME_REPO
    assert local["RepoHeaders"]["X-GitHub-Api-Version"] == "2022"


async def test_invoke_http_request_sample_answers_from_the_fetched_repo(
    github: Recorder,
) -> None:
    forward = Forwarder(github)
    model = ScriptedChatClient(["It has 412 open issues."])
    agent = AgentBuilder("GitHubRepoInfoAgent").with_chat_client(model).build()
    workflow = (
        DeclWorkflowBuilder()
        .from_file(HTTP_SAMPLE / "workflow.yaml")
        .with_agent("GitHubRepoInfoAgent", agent)
        .with_http_handler(forward)
        .build()
    )
    result = await workflow.run("How many open issues does the repository have?")
    assert result.outputs == ["It has 412 open issues."]
    assert [r.url for r in forward.seen] == [GITHUB + "/repos/microsoft/agent-framework"]
    assert github.paths == ["/repos/microsoft/agent-framework"]
    local = variables(workflow)["Local"]
    assert local["RepoInfo"] == AF_REPO
    assert "It has 412 open issues." in str(local["AgentResponse"])
    seen = [m.text for m in model.requests[0].messages]
    assert "How many open issues does the repository have?" in seen
    assert any('"open_issues_count": 412' in t for t in seen)  # the reply joined the talk


async def test_an_error_status_from_the_handler_fails_the_action_located(
    github: Recorder,
) -> None:
    github.routes["/repos/dotnet/runtime"] = lambda _p: (404, {}, b'{"message": "Not Found"}')
    workflow = (
        DeclWorkflowBuilder().from_file(HTTP_FIXTURE).with_http_handler(Forwarder(github)).build()
    )
    with pytest.raises(WorkflowRunError, match=r"fetch_repo_info.*answered 404.*Not Found"):
        await workflow.run("go")


async def test_a_handler_that_raises_fails_the_action_located() -> None:
    async def broken(request: HttpRequest) -> HttpReply:
        raise ConnectionError("no route to the proxy")

    workflow = DeclWorkflowBuilder().from_file(HTTP_FIXTURE).with_http_handler(broken).build()
    with pytest.raises(
        WorkflowRunError, match=r"fetch_repo_info.*HTTP handler: no route to the proxy"
    ):
        await workflow.run("go")
