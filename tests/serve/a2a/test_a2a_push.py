"""A2A push notifications and several tasks in one context, with a2a-sdk's own client
against a real server on loopback: a config is set, read, listed and deleted by its
owner only; a task POSTs each change of its state, its end last, to the config's URL
with its token and authentication (a refused POST is retried, the later ones waiting
behind it); the outbound guard refuses a loopback URL unless the server allows it; a
second task sent to a busy context waits its turn instead of failing."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_artifact_text, new_text_message
from a2a.types import (
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskPushNotificationConfig,
    TaskState,
)

from raf.serve import AgentHost, ServeSecurity, create_app, serve_in_thread
from raf.serve.runs import RunManager
from raf.serve.webhooks import Webhooks

from ..conftest import TOKEN_A, TOKEN_B, Served, build_agents
from .test_a2a import final_task


class Receiver:
    """An HTTP server on loopback that keeps every POST it accepts; the first
    `refuse_first` it answers 503 and only counts (`refused`)."""

    def __init__(self, refuse_first: int = 0) -> None:
        self.got: list[tuple[str, dict[str, str], Any]] = []
        self.refused = 0
        self.arrived = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                if receiver.refused < refuse_first:
                    receiver.refused += 1
                    self.send_response(503)
                    self.end_headers()
                    return
                receiver.got.append((self.path, headers, json.loads(body)))
                receiver.arrived.set()
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    async def until_completed(self, settle: float) -> None:
        """Wait (20 s at most) for the task's end to arrive, then `settle` seconds more,
        in which nothing else should come."""
        deadline = asyncio.get_running_loop().time() + 20
        while not any(completed(body) for _, _, body in self.got):
            assert asyncio.get_running_loop().time() < deadline, self.got
            await asyncio.sleep(0.05)
        await asyncio.sleep(settle)

    def states(self) -> list[str]:
        """The task's state in each POST accepted, in the order they came."""
        return [(b.get("task") or b["statusUpdate"])["status"]["state"] for _, _, b in self.got]


def serve(allow_private: bool, retry_delays: tuple[float, ...] | None = None) -> Iterator[Served]:
    agents, models, notes = build_agents()
    models["helper"].delay = 0.3  # long enough for a second task to find the context busy
    host = AgentHost(agents)
    webhooks = (
        Webhooks(None, allow_private=allow_private)
        if retry_delays is None
        else Webhooks(None, allow_private=allow_private, retry_delays=retry_delays)
    )
    runs = RunManager(host, webhooks=webhooks)
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A, TOKEN_B])
    with serve_in_thread(create_app(host, security, runs=runs)) as url:
        yield Served(url, host, models["helper"], models["clerk"], models["slow"], notes)


@pytest.fixture(scope="module")
def allowing() -> Iterator[Served]:
    """A server that may call loopback addresses (`--webhook-allow-private`)."""
    yield from serve(True)


@pytest.fixture(scope="module")
def guarding() -> Iterator[Served]:
    """A server with the default guard: no private or loopback targets."""
    yield from serve(False)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    yield made
    made.close()


async def client_for(url: str, token: str, http: httpx.AsyncClient) -> Any:
    return await create_client(url, client_config=ClientConfig(httpx_client=http, streaming=False))


def http_for(token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=30)


def test_the_card_offers_push_notifications(allowing: Served) -> None:
    with allowing.client() as anonymous:
        card = anonymous.get("/a2a/helper/.well-known/agent-card.json").json()
        old = anonymous.get("/a2a/helper/.well-known/agent.json").json()
    assert card["capabilities"]["pushNotifications"] is True
    assert old["capabilities"]["pushNotifications"] is True


async def test_a_task_posts_each_change_of_state_with_token_and_authentication(
    allowing: Served, receiver: Receiver
) -> None:
    allowing.helper.add("Pushed.")
    push = TaskPushNotificationConfig(
        url=f"{receiver.url}/hook",
        token="tok-123",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="receiver-secret"),
    )
    message = new_text_message("hello", role=Role.ROLE_USER)
    request = SendMessageRequest(
        message=message,
        configuration=SendMessageConfiguration(task_push_notification_config=push),
    )
    async with http_for(TOKEN_A) as http:
        client = await client_for(f"{allowing.url}/a2a/helper", TOKEN_A, http)
        task = final_task([e async for e in client.send_message(request)])
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    await receiver.until_completed(settle=0.3)
    for path, headers, body in receiver.got:
        assert path == "/hook"
        assert headers["x-a2a-notification-token"] == "tok-123"
        assert headers["authorization"] == "Bearer receiver-secret"
        sent = body.get("task") or body.get("statusUpdate")
        assert sent is not None and "artifactUpdate" not in body, body
        assert sent.get("id", sent.get("taskId")) == task.id
    states = receiver.states()
    # each change of state, once, the end last (the answer's pieces are not sent)
    assert states[-1] == "TASK_STATE_COMPLETED" and len(states) == len(set(states)), states
    assert "TASK_STATE_WORKING" in states, states


async def test_a_refused_notification_is_retried_and_the_later_ones_wait_behind_it() -> None:
    """The receiver refuses the first two POSTs: the first state is sent again after the
    retry delays, and the task's later states, queued behind it, still arrive after it,
    each once, the end last."""
    receiver = Receiver(refuse_first=2)
    try:
        for served in serve(True, retry_delays=(0.2, 0.2, 0.2)):
            served.helper.add("Pushed late.")
            push = TaskPushNotificationConfig(url=f"{receiver.url}/hook", token="tok-9")
            request = SendMessageRequest(
                message=new_text_message("hello", role=Role.ROLE_USER),
                configuration=SendMessageConfiguration(task_push_notification_config=push),
            )
            async with http_for(TOKEN_A) as http:
                client = await client_for(f"{served.url}/a2a/helper", TOKEN_A, http)
                task = final_task([e async for e in client.send_message(request)])
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            await receiver.until_completed(settle=0.5)
    finally:
        receiver.close()
    assert receiver.refused == 2
    states = receiver.states()
    assert states[-1] == "TASK_STATE_COMPLETED" and len(states) == len(set(states)), states
    assert "TASK_STATE_WORKING" in states, states
    assert all(headers["x-a2a-notification-token"] == "tok-9" for _, headers, _ in receiver.got)


def completed(body: dict[str, Any]) -> bool:
    sent = body.get("task") or body.get("statusUpdate") or {}
    return bool(sent.get("status", {}).get("state") == "TASK_STATE_COMPLETED")


async def test_configs_are_set_read_listed_and_deleted_by_their_owner_only(
    allowing: Served, receiver: Receiver
) -> None:
    allowing.helper.add("Done.")
    url = f"{allowing.url}/a2a/helper"
    async with http_for(TOKEN_A) as alice_http, http_for(TOKEN_B) as bob_http:
        alice = await client_for(url, TOKEN_A, alice_http)
        bob = await client_for(url, TOKEN_B, bob_http)
        task = final_task(
            [
                e
                async for e in alice.send_message(
                    SendMessageRequest(message=new_text_message("hi", role=Role.ROLE_USER))
                )
            ]
        )
        made = await alice.create_task_push_notification_config(
            TaskPushNotificationConfig(
                task_id=task.id,
                id="c1",
                url=f"{receiver.url}/one",
                authentication=AuthenticationInfo(scheme="Basic", credentials="dXNlcjpwdw=="),
            )
        )
        assert (made.id, made.task_id, made.url) == ("c1", task.id, f"{receiver.url}/one")
        await alice.create_task_push_notification_config(
            TaskPushNotificationConfig(task_id=task.id, id="c2", url=f"{receiver.url}/two")
        )
        got = await alice.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task.id, id="c1")
        )
        assert got.authentication.scheme == "Basic"
        assert got.authentication.credentials == "dXNlcjpwdw=="
        listed = await alice.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        assert sorted(c.id for c in listed.configs) == ["c1", "c2"]
        # another token's reading of the task's configs: as for a task that is not there
        with pytest.raises(Exception, match="(?i)not found"):
            await bob.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id="c1")
            )
        await alice.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="c1")
        )
        listed = await alice.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        assert [c.id for c in listed.configs] == ["c2"]


def test_the_old_method_names_reach_the_same_configs(allowing: Served) -> None:
    allowing.helper.add("Old.")
    with allowing.client(TOKEN_A) as alice:
        sent = alice.post(
            "/a2a/helper",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "message/send",
                "params": {
                    "message": {
                        "kind": "message",
                        "messageId": "m-old-1",
                        "role": "user",
                        "parts": [{"kind": "text", "text": "hi"}],
                    }
                },
            },
        ).json()
        task_id = sent["result"]["id"]
        config = {
            "url": "http://127.0.0.1:9/old",
            "id": "old1",
            "token": "t0",
            "authentication": {"schemes": ["Bearer"], "credentials": "abc"},
        }
        made = alice.post(
            "/a2a/helper",
            json={
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tasks/pushNotificationConfig/set",
                "params": {"taskId": task_id, "pushNotificationConfig": config},
            },
        ).json()
        assert "result" in made, made
        listed = alice.post(
            "/a2a/helper",
            json={
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tasks/pushNotificationConfig/list",
                "params": {"id": task_id},
            },
        ).json()
        assert [c["pushNotificationConfig"]["id"] for c in listed["result"]] == ["old1"]
        got = alice.post(
            "/a2a/helper",
            json={
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tasks/pushNotificationConfig/get",
                "params": {"id": task_id, "pushNotificationConfigId": "old1"},
            },
        ).json()
        kept = got["result"]["pushNotificationConfig"]
        assert kept["authentication"]["credentials"] == "abc", got
        gone = alice.post(
            "/a2a/helper",
            json={
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tasks/pushNotificationConfig/delete",
                "params": {"id": task_id, "pushNotificationConfigId": "old1"},
            },
        ).json()
        assert "error" not in gone, gone


async def test_a_loopback_url_is_refused_unless_the_server_allows_it(guarding: Served) -> None:
    guarding.helper.add("Guarded.")
    url = f"{guarding.url}/a2a/helper"
    async with http_for(TOKEN_A) as http:
        client = await client_for(url, TOKEN_A, http)
        task = final_task(
            [
                e
                async for e in client.send_message(
                    SendMessageRequest(message=new_text_message("hi", role=Role.ROLE_USER))
                )
            ]
        )
        with pytest.raises(Exception, match="127.0.0.1") as refused:
            await client.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task.id, url="http://127.0.0.1:9/hook")
            )
        assert "refused" in str(refused.value)
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        assert list(listed.configs) == []


async def test_a_second_task_in_a_busy_context_waits_its_turn(allowing: Served) -> None:
    allowing.helper.add("First answer.", "Second answer.")
    url = f"{allowing.url}/a2a/helper"

    async def send(text: str) -> Any:
        async with http_for(TOKEN_A) as http:
            client = await client_for(url, TOKEN_A, http)
            message = new_text_message(text, role=Role.ROLE_USER, context_id="busy-ctx")
            request = SendMessageRequest(message=message)
            return final_task([e async for e in client.send_message(request)])

    tasks = await asyncio.gather(send("one"), send("two"))
    assert [t.status.state for t in tasks] == [TaskState.TASK_STATE_COMPLETED] * 2, tasks
    answers = sorted(get_artifact_text(t.artifacts[0]) for t in tasks)
    assert answers == ["First answer.", "Second answer."]
    with allowing.client(TOKEN_A) as alice:
        session = alice.get("/agents/helper/sessions/busy-ctx").json()
        runs = alice.get("/agents/helper/sessions/busy-ctx/runs").json()
    roles = [m["role"] for m in session["messages"]]
    assert roles == ["user", "assistant"] * 2, session
    assert [r["state"] for r in runs["data"]] == ["done", "done"], runs


async def test_cancelling_a_waiting_task_leaves_the_running_one_alone(allowing: Served) -> None:
    allowing.slow.add("slow answer", "never")
    url = f"{allowing.url}/a2a/slow"
    async with http_for(TOKEN_A) as http:
        client = await client_for(url, TOKEN_A, http)

        async def send(text: str) -> Any:
            message = new_text_message(text, role=Role.ROLE_USER, context_id="wait-ctx")
            request = SendMessageRequest(
                message=message, configuration=SendMessageConfiguration(return_immediately=True)
            )
            return final_task([e async for e in client.send_message(request)])

        running = await send("first")
        for _ in range(200):  # the first task has the context before the second is sent
            got = await client.get_task(GetTaskRequest(id=running.id))
            if got.status.state == TaskState.TASK_STATE_WORKING:
                break
            await asyncio.sleep(0.05)
        waiting = await send("second")
        assert waiting.status.state == TaskState.TASK_STATE_SUBMITTED, waiting
        cancelled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        still = await client.get_task(GetTaskRequest(id=running.id))
        assert still.status.state == TaskState.TASK_STATE_WORKING, still
        stopped = await client.cancel_task(CancelTaskRequest(id=running.id))
        assert stopped.status.state == TaskState.TASK_STATE_CANCELED
    with allowing.client(TOKEN_A) as alice:
        for _ in range(200):
            runs = alice.get("/agents/slow/sessions/wait-ctx/runs").json()["data"]
            if all(r["state"] != "running" for r in runs):
                break
            await asyncio.sleep(0.05)
    assert [r["state"] for r in runs] == ["cancelled", "cancelled"], runs
