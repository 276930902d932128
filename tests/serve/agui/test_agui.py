"""AG-UI end to end: the protocol's official JavaScript client (@ag-ui/client, from npm)
runs agents of a real server on loopback; the protocol's rules for bad input are
checked with plain HTTP."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from raf.agent.builder import AgentBuilder
from raf.core.contents import ReasoningContent, TextContent
from raf.core.context import BaseContextProvider
from raf.core.function_tool import tool
from raf.core.messages import ChatMessage, Role
from raf.core.responses import AgentResponse
from raf.core.sessions import AgentSession
from raf.core.usage import UsageDetails
from raf.serve import AgentHost, ServeSecurity, create_app, serve_in_thread
from raf.testing import ScriptedChatClient, call, reply
from tests.serve.sse import events
from tests.tools.peers import PEERS

TOKEN_A = "token-a-0123456789abcdef"
TOKEN_B = "token-b-0123456789abcdef"


class TurnCounter(BaseContextProvider):
    """Keeps a count of finished turns in the session: state raf has for a thread."""

    name = "counter"
    kind = "test"

    async def on_invoked(
        self,
        agent: Any,
        session: AgentSession,
        request_messages: Sequence[ChatMessage],
        response: AgentResponse | None,
        error: BaseException | None,
    ) -> None:
        turns = (session.get_provider_state(self.name) or {}).get("turns", 0)
        session.set_provider_state(self.name, {"turns": turns + 1})


@dataclass
class Served:
    url: str
    model: ScriptedChatClient
    removed: list[int]


@pytest.fixture()
def served() -> Iterator[Served]:
    """A token-guarded server with one agent that adds, and removes notes when allowed."""
    removed: list[int] = []

    @tool(name="add", description="Add two numbers.")
    def add(a: int, b: int) -> int:
        return a + b

    @tool(name="remove_note", description="Remove a note.", approval_required=True)
    def remove_note(note: int) -> str:
        removed.append(note)
        return f"note {note} removed"

    model = ScriptedChatClient(chunk_size=4, usage=UsageDetails(input_tokens=11, output_tokens=4))
    agent = (
        AgentBuilder("notes")
        .with_chat_client(model)
        .with_tools([add, remove_note])
        .with_context_provider(TurnCounter())
        .build()
    )
    other = AgentBuilder("other").with_chat_client(ScriptedChatClient()).build()
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A, TOKEN_B])
    app = create_app(AgentHost([agent, other]), security, a2a=False)
    with serve_in_thread(app) as url:
        yield Served(url, model, removed)


def node_client(url: str, token: str, state: Any = None) -> list[dict[str, Any]]:
    """The three runs of tests/peers/agui_client.cjs, as the official client saw them
    (starting with `state` as the front end's own state when given)."""
    node = shutil.which("node")
    script = PEERS / "agui_client.cjs"
    if node is None or not (PEERS / "node_modules" / "@ag-ui" / "client").exists():
        pytest.fail("node and @ag-ui/client are needed: run `npm install` in tests/peers")
    given = [] if state is None else [json.dumps(state)]
    done = subprocess.run(
        [node, str(script), url, token, *given],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    runs: list[dict[str, Any]] = json.loads(done.stdout)
    return runs


def types(run: dict[str, Any]) -> list[str]:
    return [e["type"] for e in run["events"]]


def test_the_official_client_streams_text_tools_state_and_answers_an_interrupt(
    served: Served,
) -> None:
    thought = ChatMessage(
        role=Role.ASSISTANT,
        contents=[
            ReasoningContent(text="Two and three make five."),
            TextContent(text="The sum is 5."),
        ],
    )
    served.model.add(
        reply("", call("add", {"a": 2, "b": 3}, call_id="c-add")),
        thought,
        reply("", call("remove_note", {"note": 7}, call_id="c-rm")),
        "Note 7 is gone.",
    )
    first, second, third = node_client(f"{served.url}/agui/notes", TOKEN_A)
    assert first["failed"] is None and second["failed"] is None and third["failed"] is None

    # run 1: a tool call and its result, then text streamed in pieces
    assert types(first)[0] == "RUN_STARTED" and types(first)[-1] == "RUN_FINISHED"
    kinds = types(first)
    assert kinds.index("TOOL_CALL_START") < kinds.index("TOOL_CALL_ARGS")
    assert kinds.index("TOOL_CALL_END") < kinds.index("TOOL_CALL_RESULT")
    assert kinds.index("TOOL_CALL_RESULT") < kinds.index("REASONING_START")
    assert kinds.index("REASONING_END") < kinds.index("TEXT_MESSAGE_START")
    thinking = [e["delta"] for e in first["events"] if e["type"] == "REASONING_MESSAGE_CONTENT"]
    assert "".join(thinking) == "Two and three make five."
    start = next(e for e in first["events"] if e["type"] == "TOOL_CALL_START")
    assert (start["toolCallId"], start["toolCallName"]) == ("c-add", "add")
    args = "".join(e["delta"] for e in first["events"] if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args) == {"a": 2, "b": 3}
    result = next(e for e in first["events"] if e["type"] == "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"]) == ("c-add", "5")
    pieces = [e["delta"] for e in first["events"] if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert len(pieces) > 1 and "".join(pieces) == "The sum is 5."
    finished = first["events"][-1]
    assert finished["outcome"] == {"type": "success"}
    assert finished["usage"][0]["inputTokens"] == 22  # two model calls of 11
    # the state raf keeps for the thread reached the client, first whole, then patched
    assert "STATE_SNAPSHOT" in kinds and first["state"] == {"counter": {"turns": 1}}
    assert "STATE_DELTA" in types(second)
    roles = [m["role"] for m in first["messages"]]
    assert roles == ["user", "assistant", "tool", "reasoning", "assistant"]

    # run 2: the call needing approval ends the run with an interrupt
    finished = second["events"][-1]
    assert finished["outcome"]["type"] == "interrupt"
    (interrupt,) = finished["outcome"]["interrupts"]
    assert interrupt["reason"] == "tool_call" and interrupt["toolCallId"] == "c-rm"
    assert interrupt["responseSchema"]["required"] == ["approved"]
    assert "remove_note" in interrupt["message"]
    assert [i["id"] for i in second["pendingInterrupts"]] == [interrupt["id"]]
    assert "TOOL_CALL_START" in types(second) and "TOOL_CALL_RESULT" not in types(second)

    # run 3: resumed with the answer; the call runs, its result joins the original call
    assert served.removed == [7]
    kinds = types(third)
    assert "TOOL_CALL_START" not in kinds
    result = next(e for e in third["events"] if e["type"] == "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"]) == ("c-rm", "note 7 removed")
    text = "".join(e["delta"] for e in third["events"] if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "Note 7 is gone."
    assert third["events"][-1]["outcome"] == {"type": "success"}
    assert third["pendingInterrupts"] == []
    assert third["state"] == {"counter": {"turns": 3}}
    # the model saw the whole conversation, kept by the server's session; the state the
    # client echoes back is raf's own and is not shown to it as the application's
    last = served.model.requests[-1]
    assert "current state" not in (last.system or "")
    assert [m.text for m in last.messages if m.role.value == "user"] == [
        "What is 2 + 3?",
        "Remove note 7.",
    ]


def test_the_front_end_s_own_state_survives_raf_s_snapshots_and_deltas(served: Served) -> None:
    """A snapshot replaces a client's whole state, so raf's holds the client's keys too,
    and every delta is a JSON Patch the official client applies to that merged state;
    every event is one of the protocol's own (the Python package's models)."""
    from ag_ui.core.events import Event
    from pydantic import TypeAdapter

    served.model.add(
        reply("", call("add", {"a": 2, "b": 3}, call_id="c-add")),
        "The sum is 5.",
        reply("", call("remove_note", {"note": 7}, call_id="c-rm")),
        "Note 7 is gone.",
    )
    front = {"theme": "dark", "sidebar": {"open": True}, "counter": "the client's"}
    runs = node_client(f"{served.url}/agui/notes", TOKEN_A, front)
    own = {"theme": "dark", "sidebar": {"open": True}}
    assert [run["state"] for run in runs] == [own | {"counter": {"turns": n}} for n in (1, 2, 3)]
    for run in runs:
        assert run["failed"] is None and run["warnings"] == [], run["warnings"]
    snapshots = [e for run in runs for e in run["events"] if e["type"] == "STATE_SNAPSHOT"]
    assert all(own.items() <= s["snapshot"].items() for s in snapshots)
    deltas = [e["delta"] for run in runs for e in run["events"] if e["type"] == "STATE_DELTA"]
    assert deltas == [
        [{"op": "replace", "path": "/counter", "value": {"turns": n}}] for n in (2, 3)
    ]
    check = TypeAdapter(Event)
    for run in runs:
        for event in run["events"]:
            check.validate_python(event)
    # the model is shown the front end's own keys, never the one raf owns
    system = served.model.requests[-1].system or ""
    assert '{"sidebar": {"open": true}, "theme": "dark"}' in system


# -- bad input, tokens and threads, over plain HTTP -------------------------------------


def run_input(thread: str, run: str, *texts: str, **extra: Any) -> dict[str, Any]:
    messages = [{"id": f"m{i}", "role": "user", "content": t} for i, t in enumerate(texts)]
    return {"threadId": thread, "runId": run, "messages": messages, **extra}


def post(url: str, body: Any, token: str | None = TOKEN_A, **headers: str) -> httpx.Response:
    sent = {"authorization": f"Bearer {token}"} if token else {}
    sent.update(headers)
    return httpx.post(f"{url}/agui/notes", json=body, headers=sent, timeout=30)


def agui_events(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return [data for _name, data in events(response)]


def interrupted(served: Served, thread: str, token: str = TOKEN_A) -> str:
    """Start a run on `thread` that stops for approval; the interrupt's id."""
    served.model.add(reply("", call("remove_note", {"note": 1}, call_id=f"c-{thread}")))
    got = agui_events(post(served.url, run_input(thread, "r1", "remove 1"), token))
    (interrupt,) = got[-1]["outcome"]["interrupts"]
    return str(interrupt["id"])


def test_a_thread_with_open_interrupts_takes_only_a_resume_of_all_of_them(
    served: Served,
) -> None:
    interrupt = interrupted(served, "t-rules")
    new_input = agui_events(post(served.url, run_input("t-rules", "r2", "hello")))
    assert [e["type"] for e in new_input] == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_ERROR"]
    assert new_input[-1]["code"] == "awaiting_approval"
    unknown = run_input("t-rules", "r3", resume=[{"interruptId": "int-nope", "status": "resolved"}])
    error = agui_events(post(served.url, unknown))[-1]
    assert (error["type"], error["code"]) == ("RUN_ERROR", "unknown_interrupt")
    assert interrupt in error["message"]
    bad = run_input(
        "t-rules", "r4", resume=[{"interruptId": interrupt, "status": "resolved", "payload": "yes"}]
    )
    assert agui_events(post(served.url, bad))[-1]["code"] == "invalid_resume_payload"
    # a refusal is an answer: the run goes on and the tool never runs
    served.model.add("Left it alone.")
    refuse = run_input(
        "t-rules",
        "r5",
        resume=[{"interruptId": interrupt, "status": "resolved", "payload": {"approved": False}}],
    )
    got = agui_events(post(served.url, refuse))
    result = next(e for e in got if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == "c-t-rules" and served.removed == []
    assert got[-1]["outcome"] == {"type": "success"}
    # answering again is safe: the interrupt is closed
    assert agui_events(post(served.url, refuse))[-1]["code"] == "unknown_interrupt"


def test_threads_belong_to_their_token(served: Served) -> None:
    interrupt = interrupted(served, "shared-name", TOKEN_A)
    answer = run_input(
        "shared-name",
        "r2",
        resume=[{"interruptId": interrupt, "status": "resolved", "payload": {"approved": True}}],
    )
    error = agui_events(post(served.url, answer, TOKEN_B))[-1]
    assert (error["type"], error["code"]) == ("RUN_ERROR", "unknown_interrupt")
    assert served.removed == []
    served.model.add("Hello B.")
    got = agui_events(post(served.url, run_input("shared-name", "r3", "hi"), TOKEN_B))
    assert got[-1]["outcome"] == {"type": "success"}
    seen = served.model.requests[-1].messages
    assert [m.text for m in seen if m.role.value == "user"] == ["hi"]


def test_the_server_s_guards_hold_for_ag_ui(served: Served) -> None:
    body = run_input("t-guard", "r1", "hi")
    assert post(served.url, body, None).status_code == 401
    assert post(served.url, body, origin="http://evil.example").status_code == 403
    plain = httpx.post(
        f"{served.url}/agui/notes",
        content=json.dumps(body),
        headers={"authorization": f"Bearer {TOKEN_A}", "content-type": "text/plain"},
        timeout=30,
    )
    assert plain.status_code == 415
    missing = post(served.url, {"threadId": "t", "messages": []})
    assert missing.status_code == 422 and "runId" in missing.json()["error"]["message"]
    assert post(served.url, body | {"threadId": "../x"}).status_code == 400
    served.model.add("Hi.")
    agui_events(post(served.url, run_input("t-one-agent", "r1", "hi")))
    other = httpx.post(
        f"{served.url}/agui/other",
        json=run_input("t-one-agent", "r2", "hi"),
        headers={"authorization": f"Bearer {TOKEN_A}"},
        timeout=30,
    )
    assert other.status_code == 409 and other.json()["error"]["code"] == "thread_of_another_agent"
    unknown = httpx.post(
        f"{served.url}/agui/nobody",
        json=body,
        headers={"authorization": f"Bearer {TOKEN_A}"},
        timeout=30,
    )
    assert unknown.status_code == 404


def test_client_context_becomes_instructions_and_tool_messages_are_refused(
    served: Served,
) -> None:
    served.model.add("Noted.")
    body = run_input(
        "t-context", "r1", "hi", context=[{"description": "page", "value": "settings"}]
    )
    assert agui_events(post(served.url, body))[-1]["outcome"] == {"type": "success"}
    assert "- page: settings" in served.model.requests[-1].system
    fresh = {
        "threadId": "t-tools",
        "runId": "r1",
        "messages": [{"id": "x", "role": "tool", "toolCallId": "c", "content": "42"}],
    }
    error = agui_events(post(served.url, fresh))[-1]
    assert (error["type"], error["code"]) == ("RUN_ERROR", "unsupported_message")


def test_state_a_client_sends_never_overwrites_the_threads(served: Served) -> None:
    """The thread's state is its context providers': a client's `state` (stale, or made
    up) does not replace it, and what the server sends holds raf's value of every key it
    owns beside the client's own keys. The client's own keys reach the model as
    instructions for the run."""
    served.model.add("One.", "Two.", "Three.")
    forged = {"counter": {"turns": 99}, "ui": {"tab": "notes"}}
    first = agui_events(post(served.url, run_input("t-state", "r1", "hi", state=forged)))
    snapshot = next(e for e in first if e["type"] == "STATE_SNAPSHOT")
    assert snapshot["snapshot"] == {"ui": {"tab": "notes"}, "counter": {"turns": 1}}
    system = served.model.requests[-1].system or ""
    assert 'current state (JSON, as the user sees it):\n{"ui": {"tab": "notes"}}' in system
    assert "99" not in system  # a provider's key is raf's, not the client's
    second = agui_events(post(served.url, run_input("t-state", "r2", "again", state=forged)))
    assert second[1] == {
        "type": "STATE_SNAPSHOT",
        "snapshot": {"ui": {"tab": "notes"}, "counter": {"turns": 1}},
    }
    delta = next(e for e in second if e["type"] == "STATE_DELTA")
    assert delta["delta"] == [{"op": "replace", "path": "/counter", "value": {"turns": 2}}]
    # a state that is not an object has no room for raf's keys: raf's replaces it
    third = agui_events(post(served.url, run_input("t-state", "r3", "more", state=["a"])))
    assert third[1] == {"type": "STATE_SNAPSHOT", "snapshot": {"counter": {"turns": 2}}}


def test_a_failure_midway_is_the_run_s_last_event_and_the_tools_that_ran_stay_recorded(
    served: Served,
) -> None:
    from raf.core.errors import ModelError

    served.model.add(
        reply("", call("add", {"a": 1, "b": 1}, call_id="c-fail")),
        ModelError("the model is down"),
        "Two.",
    )
    got = agui_events(post(served.url, run_input("t-fail", "r1", "1 + 1?")))
    kinds = [e["type"] for e in got]
    assert kinds[0] == "RUN_STARTED" and "TOOL_CALL_RESULT" in kinds
    assert (got[-1]["type"], got[-1]["code"]) == ("RUN_ERROR", "model_error")
    assert "the model provider failed" in got[-1]["message"]
    assert "the model is down" not in got[-1]["message"]  # that is for the server's log
    again = agui_events(post(served.url, run_input("t-fail", "r2", "1 + 1?")))
    assert again[-1]["outcome"] == {"type": "success"}
    assert "TOOL_CALL_START" not in [e["type"] for e in again]  # add ran once, in r1
    # the thread kept the round whose tool ran (a retry must not run it again), so the
    # model sees the first question, its call and result, and the question asked again
    seen = served.model.requests[-1].messages
    assert [m.text for m in seen if m.role is Role.USER] == ["1 + 1?", "1 + 1?"]
    assert [m.role for m in seen].count(Role.TOOL) == 1


def test_state_instructions_show_only_the_clients_own_state() -> None:
    from raf.serve.agui.routes import state_instructions

    assert state_instructions(None, {"counter"}) is None
    assert state_instructions({"counter": {"turns": 2}}, {"counter"}) is None
    shown = state_instructions({"counter": 1, "form": {"name": "Ada"}}, {"counter"})
    assert shown is not None and shown.endswith('\n{"form": {"name": "Ada"}}')
    listed = state_instructions(["step 1", "step 2"], {"counter"})
    assert listed is not None and listed.endswith('\n["step 1", "step 2"]')


def test_an_unknown_forwarded_if_busy_is_a_422_naming_the_field(served: Served) -> None:
    body = run_input("t-busy", "r1", "hi", forwardedProps={"if_busy": "someday"})
    answer = post(served.url, body)
    assert answer.status_code == 422
    assert "forwardedProps.if_busy" in answer.json()["error"]["message"]
