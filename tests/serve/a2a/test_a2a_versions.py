"""A2A 0.3 and 1.0 clients on one endpoint (a2a-sdk's own clients of both versions, a real
server on loopback), the errors a wrong version, method, part or status gets, ListTasks
paging on the wire, and the public URL the cards publish."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_artifact_text, new_data_part, new_text_message
from a2a.types import AgentCard, GetTaskRequest, Role, SendMessageRequest, TaskState
from google.protobuf.json_format import ParseDict  # type: ignore[import-untyped]

from raf.cli.main import main
from raf.core.errors import ConfigurationError
from raf.serve import AgentHost, ServeSecurity, create_app, serve_in_thread
from raf.serve.public_url import check_public_url
from raf.testing import call, reply
from tests.serve.conftest import TOKEN_A, TOKEN_B, Served, build_agents, start

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def a2a_both() -> Iterator[Served]:
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A, TOKEN_B])
    yield from start(security, openai=False, agui=False)


class Wire:
    """What a client sent: each JSON-RPC method with the A2A-Version header it carried."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None]] = []

    async def record(self, request: httpx.Request) -> None:
        if request.method == "POST":
            method = json.loads(request.content)["method"]
            self.sent.append((method, request.headers.get("a2a-version")))


async def card_of(url: str, *, only: str | None = None) -> AgentCard:
    """The served card as the SDK reads it; `only` keeps the interfaces of one version (a
    card as a server of that version alone would publish it)."""
    async with httpx.AsyncClient(timeout=30) as http:
        data = (await http.get(f"{url}/.well-known/agent-card.json")).json()
    card: AgentCard = ParseDict(data, AgentCard(), ignore_unknown_fields=True)
    if only is not None:
        kept = [i for i in card.supported_interfaces if i.protocol_version == only]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(kept)
    return card


async def talk(card: AgentCard, token: str, wire: Wire, message: Any) -> Any:
    """Send `message` with a client made from `card`; the last task it got back."""
    headers = {"authorization": f"Bearer {token}"}
    hooks = {"request": [wire.record]}
    async with httpx.AsyncClient(headers=headers, timeout=30, event_hooks=hooks) as http:
        client = await create_client(
            card, client_config=ClientConfig(httpx_client=http, streaming=False)
        )
        events = [e async for e in client.send_message(SendMessageRequest(message=message))]
    tasks = [e.task for e in events if e.HasField("task")]
    assert tasks, events
    return tasks[-1]


async def get_task(card: AgentCard, token: str, wire: Wire, task_id: str) -> Any:
    headers = {"authorization": f"Bearer {token}"}
    hooks = {"request": [wire.record]}
    async with httpx.AsyncClient(headers=headers, timeout=30, event_hooks=hooks) as http:
        client = await create_client(
            card, client_config=ClientConfig(httpx_client=http, streaming=False)
        )
        return await client.get_task(GetTaskRequest(id=task_id))


async def test_a_0_3_client_and_a_1_0_client_share_one_endpoint(a2a_both: Served) -> None:
    a2a_both.helper.add("From 1.0.", "From 0.3.")
    url = f"{a2a_both.url}/a2a/helper"
    new, old = await card_of(url), await card_of(url, only="0.3")
    new_wire, old_wire = Wire(), Wire()

    first = await talk(new, TOKEN_A, new_wire, new_text_message("hi", role=Role.ROLE_USER))
    assert first.status.state == TaskState.TASK_STATE_COMPLETED, first
    assert get_artifact_text(first.artifacts[0]) == "From 1.0."
    # the 0.3 client continues the same context: one session, one conversation
    follow = new_text_message("and you?", role=Role.ROLE_USER, context_id=first.context_id)
    second = await talk(old, TOKEN_A, old_wire, follow)
    assert second.status.state == TaskState.TASK_STATE_COMPLETED, second
    assert get_artifact_text(second.artifacts[0]) == "From 0.3."
    assert second.context_id == first.context_id

    assert new_wire.sent == [("SendMessage", "1.0")]
    assert [method for method, _ in old_wire.sent] == ["message/send"]
    assert all(version in (None, "0.3") for _, version in old_wire.sent), old_wire.sent

    # the same tasks answer either version, for their owner only
    seen_by_old = await get_task(old, TOKEN_A, old_wire, first.id)
    seen_by_new = await get_task(new, TOKEN_A, new_wire, second.id)
    assert (seen_by_old.id, seen_by_new.id) == (first.id, second.id)
    assert old_wire.sent[-1][0] == "tasks/get" and new_wire.sent[-1] == ("GetTask", "1.0")
    with pytest.raises(Exception, match="not found|Task not found"):
        await get_task(old, TOKEN_B, Wire(), first.id)
    with a2a_both.client(TOKEN_A) as alice:
        session = alice.get(f"/agents/helper/sessions/{first.context_id}").json()
    assert [m["role"] for m in session["messages"]] == ["user", "assistant"] * 2


def test_the_card_speaks_to_clients_of_both_versions(a2a_both: Served) -> None:
    with a2a_both.client() as anonymous:
        card = anonymous.get("/a2a/clerk/.well-known/agent-card.json").json()
        old = anonymous.get(
            "/a2a/clerk/.well-known/agent-card.json", headers={"A2A-Version": "0.3"}
        ).json()
    versions = {i["protocolVersion"]: i["url"] for i in card["supportedInterfaces"]}
    assert set(versions) == {"1.0", "0.3"}
    assert versions["1.0"] == versions["0.3"] == f"{a2a_both.url}/a2a/clerk"
    # the 0.3 fields a 0.3 client reads, in 0.3's card
    assert old["url"] == versions["0.3"] and old["protocolVersion"] == "0.3"
    assert old["preferredTransport"] == "JSONRPC" and old["security"] == [{"bearer": []}]


def rpc(
    served: Served, method: str, params: Any, version: str | None = None, token: str = TOKEN_A
) -> dict[str, Any]:
    headers = {"A2A-Version": version} if version else {}
    with served.client(token, headers) as client:
        body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
        answer = client.post("/a2a/helper", json=body)
    assert answer.status_code == 200, answer.text
    if answer.headers["content-type"].startswith("text/event-stream"):
        # a streaming method's early error is the one event of its stream
        data = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
        assert len(data) == 1, answer.text
        return dict(json.loads(data[0]))
    return dict(answer.json())


OLD_MESSAGE = {"kind": "message", "messageId": "m1", "role": "user", "parts": []}
NEW_MESSAGE = {"messageId": "m2", "role": "ROLE_USER", "parts": []}


def error_of(answer: dict[str, Any]) -> tuple[int, str]:
    assert "result" not in answer, answer
    return answer["error"]["code"], answer["error"]["message"]


def test_wrong_versions_methods_and_parts_say_what_to_change(a2a_both: Served) -> None:
    said = {"parts": [{"kind": "text", "text": "hi"}]}
    code, message = error_of(rpc(a2a_both, "message/send", {"message": OLD_MESSAGE | said}, "1.0"))
    assert code == -32601 and "call 'SendMessage'" in message and "no A2A-Version" in message
    new = {"message": NEW_MESSAGE | {"parts": [{"text": "hi"}]}}
    code, message = error_of(rpc(a2a_both, "SendMessage", new))
    assert code == -32601 and "send the header A2A-Version: 1.0" in message
    assert "'message/send'" in message
    code, message = error_of(rpc(a2a_both, "SendMessage", new, "2.0"))
    assert code == -32009 and "speaks 1.0" in message and "0.3" in message
    code, message = error_of(rpc(a2a_both, "message/sned", {}))
    assert code == -32601 and "message/send" in message and "SendMessage" in message
    code, message = error_of(rpc(a2a_both, "tasks/list", {}))
    assert code == -32601 and "ListTasks" in message

    bad_old = {"message": OLD_MESSAGE | {"parts": [{"kind": "picture"}]}}
    code, message = error_of(rpc(a2a_both, "message/send", bad_old))
    assert code == -32602 and "parts[0]" in message and "'text' (with 'text')" in message
    no_text = {"message": OLD_MESSAGE | {"parts": [{"kind": "text"}]}}
    code, message = error_of(rpc(a2a_both, "message/stream", no_text))
    assert code == -32602 and "no 'text'" in message
    empty = {"message": NEW_MESSAGE | {"parts": [{"bogus": 1}]}}
    code, message = error_of(rpc(a2a_both, "SendMessage", empty, "1.0"))
    assert code == -32602 and "holds none of text, raw, url, data" in message
    none = {"message": NEW_MESSAGE}
    code, message = error_of(rpc(a2a_both, "SendMessage", none, "1.0"))
    assert code == -32602 and "at least one part" in message


def test_list_tasks_pages_hold_what_they_return_and_bad_statuses_are_refused(
    a2a_both: Served,
) -> None:
    a2a_both.helper.add("a", "b", "c")
    for text in ("one", "two", "three"):
        asked = NEW_MESSAGE | {"messageId": text, "parts": [{"text": text}]}
        sent = rpc(a2a_both, "SendMessage", {"message": asked}, "1.0", token=TOKEN_B)
        assert sent["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", sent
    first = rpc(a2a_both, "ListTasks", {"pageSize": 2}, "1.0", token=TOKEN_B)["result"]
    assert (len(first["tasks"]), first["pageSize"], first["totalSize"]) == (2, 2, 3)
    rest = rpc(
        a2a_both,
        "ListTasks",
        {"pageSize": 2, "pageToken": first["nextPageToken"]},
        "1.0",
        token=TOKEN_B,
    )["result"]
    assert (len(rest["tasks"]), rest["pageSize"]) == (1, 1) and not rest.get("nextPageToken")
    seen = {t["id"] for t in first["tasks"]} | {t["id"] for t in rest["tasks"]}
    assert len(seen) == 3
    done = rpc(a2a_both, "ListTasks", {"status": "TASK_STATE_COMPLETED"}, "1.0", token=TOKEN_B)
    assert done["result"]["pageSize"] == 3
    working = rpc(a2a_both, "ListTasks", {"status": "TASK_STATE_WORKING"}, "1.0", token=TOKEN_B)
    assert working["result"].get("tasks", []) == [] and working["result"]["pageSize"] == 0
    code, message = error_of(
        rpc(a2a_both, "ListTasks", {"status": "TASK_STATE_DONE"}, "1.0", token=TOKEN_B)
    )
    assert code == -32602 and "'TASK_STATE_DONE' is not a task state" in message
    assert "TASK_STATE_COMPLETED" in message


def test_a_public_url_is_what_every_card_and_the_openapi_document_publish() -> None:
    agents, _models, _notes = build_agents()
    app = create_app(
        AgentHost(agents),
        ServeSecurity.for_bind("127.0.0.1"),
        openai=False,
        agui=False,
        public_url="https://agents.example.com/raf/",
    )
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        root = http.get("/.well-known/agent-card.json").json()
        clerk = http.get("/a2a/clerk/.well-known/agent-card.json").json()
        old_root = http.get("/.well-known/agent-card.json", headers={"A2A-Version": "0.3"}).json()
        openapi = http.get("/openapi.json").json()
    assert openapi["servers"] == [{"url": "https://agents.example.com/raf"}]
    # 1.0's card names its endpoint in supportedInterfaces only; 0.3's in url
    assert {i["url"] for i in root["supportedInterfaces"]} == {
        "https://agents.example.com/raf/a2a/helper"
    }
    assert {i["url"] for i in clerk["supportedInterfaces"]} == {
        "https://agents.example.com/raf/a2a/clerk"
    }
    assert old_root["url"] == "https://agents.example.com/raf/a2a/helper"
    for card in (root, clerk, old_root):
        assert "127.0.0.1" not in json.dumps(card)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("agents.example.com", "must start with http:// or https://"),
        ("ftp://agents.example.com", "must start with http:// or https://"),
        ("https://", "has no host name"),
        ("https://user:pw@agents.example.com", "must not hold a user name or password"),
        ("https://agents.example.com/?x=1", "must not have a query or fragment"),
        ("https://agents.example.com:99999", "is not a valid URL"),
        ("https://agents.example.com/my agents", "holds ' ' at character 30.*%20"),
        ('https://agents.example.com/"onmouseover=x', "holds '\"' at character 28.*%22"),
        ("https://agents.example.com/<script>", "holds '<' at character 28.*%3C"),
        ("https://agents.example.com/it's", 'holds "\'" at character 30'),
        ("https://agents.example.com/50%", "holds '%' at character 30.*%25"),
        ("https://agents.example.com/a\tb", r"holds '\\t' at character 29.*%09"),
    ],
)
def test_a_public_url_that_is_not_an_absolute_http_url_is_refused(given: str, said: str) -> None:
    with pytest.raises(ConfigurationError, match=said) as caught:
        check_public_url(given)
    assert "https://agents.example.com" in str(caught.value)
    with pytest.raises(ConfigurationError, match=said):
        create_app(AgentHost(build_agents()[0]), public_url=given)


def test_a_public_url_with_its_escapes_written_out_is_kept_as_given() -> None:
    given = "https://agents.example.com/team%20a/raf~1/"
    assert check_public_url(given) == given.rstrip("/")


def test_raf_serve_checks_public_url_before_it_starts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "no-such-agent.yaml", "--public-url", "ftp://x.example"]) == 1
    err = capsys.readouterr().err
    assert "--public-url 'ftp://x.example' must start with http:// or https://" in err
    assert main(["serve", "no-such-agent.yaml", "--public-url", "https://x.example/<b>"]) == 1
    err = capsys.readouterr().err
    assert "--public-url 'https://x.example/<b>' holds '<' at character 19" in err
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    assert "--public-url URL" in capsys.readouterr().out


async def test_a_0_3_client_streams_and_answers_an_approval(a2a_both: Served) -> None:
    a2a_both.clerk.add(reply("", call("write_note", {"text": "from 0.3"}, call_id="n1")), "Done.")
    url = f"{a2a_both.url}/a2a/clerk"
    old, wire = await card_of(url, only="0.3"), Wire()
    headers = {"authorization": f"Bearer {TOKEN_A}"}
    hooks = {"request": [wire.record]}
    async with httpx.AsyncClient(headers=headers, timeout=30, event_hooks=hooks) as http:
        client = await create_client(old, client_config=ClientConfig(httpx_client=http))
        ask = new_text_message("write it down", role=Role.ROLE_USER)
        events = [e async for e in client.send_message(SendMessageRequest(message=ask))]
        states = [e.status_update.status.state for e in events if e.HasField("status_update")]
        assert states[-1] == TaskState.TASK_STATE_INPUT_REQUIRED, events
        task = next(e.task for e in events if e.HasField("task"))
        assert a2a_both.notes == []
        answer = new_text_message("", role=Role.ROLE_USER, context_id=task.context_id)
        answer.task_id = task.id
        del answer.parts[:]
        answer.parts.append(new_data_part({"approvals": [{"call_id": "n1", "approved": True}]}))
        events = [e async for e in client.send_message(SendMessageRequest(message=answer))]
    states = [e.status_update.status.state for e in events if e.HasField("status_update")]
    assert states[-1] == TaskState.TASK_STATE_COMPLETED, events
    assert a2a_both.notes == ["from 0.3"]
    assert [method for method, _ in wire.sent] == ["message/stream", "message/stream"]
