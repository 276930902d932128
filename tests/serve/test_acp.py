"""ACP end to end: the SDK's client side drives `raf acp FILE` over a real subprocess."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, cast

import pytest
from acp import PROTOCOL_VERSION, Client, RequestError, spawn_agent_process, text_block
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

from tests.cli.helpers import APPROVING_AGENT, raf_env, script


class Editor:
    """The editor side: records session updates and answers permission requests."""

    def __init__(self, allow: bool | None) -> None:
        self.allow = allow
        self.updates: list[Any] = []
        self.asked: list[Any] = []
        self.order: list[tuple[str, str]] = []
        """(what, tool call id) of every message about a tool call, as they came."""

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)
        if update.session_update in ("tool_call", "tool_call_update"):
            self.order.append((update.session_update, update.tool_call_id))

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **_: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        self.order.append(("permission", tool_call.tool_call_id))
        if self.allow is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        option = "allow_once" if self.allow else "reject_once"
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option)
        )

    def text(self) -> str:
        return "".join(
            u.content.text for u in self.updates if u.session_update == "agent_message_chunk"
        )


async def drive(tmp_path: Path, editor: Editor, replies: list[Any], *prompts: str) -> Any:
    project = tmp_path / "project"
    project.mkdir()
    (project / "agent.yaml").write_text(APPROVING_AGENT, encoding="utf-8")
    (tmp_path / "outside.txt").write_text("outside text")
    model = script(tmp_path, replies)
    async with spawn_agent_process(
        cast(Client, editor),
        sys.executable,
        "-m",
        "raf.cli",
        "acp",
        str(project / "agent.yaml"),
        "--model",
        model,
        env=raf_env(tmp_path),
        cwd=project,
    ) as (conn, _process):
        init = await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        assert init.agent_capabilities is not None
        assert init.agent_capabilities.load_session is True
        session = await conn.new_session(cwd=str(tmp_path))
        results = []
        for prompt in prompts:
            results.append(
                await asyncio.wait_for(
                    conn.prompt(session_id=session.session_id, prompt=[text_block(prompt)]), 30
                )
            )
        return session.session_id, results, conn


READ = {"calls": [{"name": "read_file", "arguments": {"path": "../outside.txt"}, "id": "r1"}]}


async def test_text_streams_and_the_conversation_continues(tmp_path: Path) -> None:
    editor = Editor(allow=True)
    _sid, results, _conn = await drive(
        tmp_path, editor, ["Hello from raf over ACP", "second turn"], "hi", "again"
    )
    assert [r.stop_reason for r in results] == ["end_turn", "end_turn"]
    assert editor.text() == "Hello from raf over ACPsecond turn"
    chunks = [u for u in editor.updates if u.session_update == "agent_message_chunk"]
    assert len(chunks) > 2


async def test_an_approval_is_a_permission_request_to_the_editor(tmp_path: Path) -> None:
    editor = Editor(allow=True)
    _sid, (result,), _ = await drive(tmp_path, editor, [READ, "It says: outside text"], "read")
    assert result.stop_reason == "end_turn"
    assert [c.tool_call_id for c in editor.asked] == ["r1"]
    assert editor.asked[0].raw_input == {"path": "../outside.txt"}
    tool_updates = [u for u in editor.updates if u.session_update == "tool_call_update"]
    assert tool_updates[-1].status == "completed"
    assert "outside text" in json.dumps(tool_updates[-1].raw_output)
    assert editor.text() == "It says: outside text"


async def test_the_editor_hears_of_a_call_before_any_update_of_it(tmp_path: Path) -> None:
    allowing = Editor(allow=True)
    await drive(tmp_path, allowing, [READ, "It says: outside text"], "read")
    assert [what for what, call in allowing.order if call == "r1"] == [
        "tool_call",
        "permission",
        "tool_call_update",
        "tool_call_update",
    ]
    start = next(u for u in allowing.updates if u.session_update == "tool_call")
    assert start.title == "read_file" and start.raw_input == {"path": "../outside.txt"}
    rejecting = Editor(allow=False)
    (tmp_path / "again").mkdir()
    await drive(tmp_path / "again", rejecting, [READ, "Not allowed."], "read")
    assert [what for what, _ in rejecting.order] == ["tool_call", "permission", "tool_call_update"]


async def test_a_rejected_or_cancelled_permission(tmp_path: Path) -> None:
    rejecting = Editor(allow=False)
    _, (result,), _ = await drive(tmp_path, rejecting, [READ, "Not allowed."], "read")
    assert result.stop_reason == "end_turn" and rejecting.text() == "Not allowed."
    failed = [u for u in rejecting.updates if u.session_update == "tool_call_update"]
    assert failed[-1].status == "failed"
    walking_away = Editor(allow=None)
    (tmp_path / "again").mkdir()
    _, (result,), _ = await drive(tmp_path / "again", walking_away, [READ], "read")
    assert result.stop_reason == "cancelled"


async def test_an_unknown_session_is_a_protocol_error(tmp_path: Path) -> None:
    editor = Editor(allow=True)
    (tmp_path / "agent.yaml").write_text("name: plain\n", encoding="utf-8")
    model = script(tmp_path, ["x"])
    async with spawn_agent_process(
        cast(Client, editor),
        sys.executable,
        "-m",
        "raf.cli",
        "acp",
        str(tmp_path / "agent.yaml"),
        "--model",
        model,
        env=raf_env(tmp_path),
        cwd=tmp_path,
    ) as (conn, _process):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        with pytest.raises(RequestError) as info:
            await asyncio.wait_for(conn.prompt(session_id="nope", prompt=[text_block("hi")]), 30)
        assert "no session named 'nope'" in str(info.value.data or info.value)


async def test_a_stored_session_is_replayed_by_session_load(tmp_path: Path) -> None:
    first = Editor(allow=True)
    sid, _, _ = await drive(tmp_path, first, ["Remember the number 7."], "a number please")
    later = Editor(allow=True)
    project = tmp_path / "project"
    async with spawn_agent_process(
        cast(Client, later),
        sys.executable,
        "-m",
        "raf.cli",
        "acp",
        str(project / "agent.yaml"),
        "--model",
        script(tmp_path, ["unused"], name="later.json"),
        env=raf_env(tmp_path),
        cwd=project,
    ) as (conn, _process):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        await asyncio.wait_for(conn.load_session(cwd=str(project), session_id=sid), 30)
        replayed = [(u.session_update, u.content.text) for u in later.updates]
    assert replayed == [
        ("user_message_chunk", "a number please"),
        ("agent_message_chunk", "Remember the number 7."),
    ]


async def test_session_cancel_stops_a_running_prompt(tmp_path: Path) -> None:
    editor = Editor(allow=True)
    (tmp_path / "agent.yaml").write_text("name: plain\n", encoding="utf-8")
    model = script(tmp_path, [{"text": "too late", "delay": 30}])
    async with spawn_agent_process(
        cast(Client, editor),
        sys.executable,
        "-m",
        "raf.cli",
        "acp",
        str(tmp_path / "agent.yaml"),
        "--model",
        model,
        env=raf_env(tmp_path),
        cwd=tmp_path,
    ) as (conn, _process):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        session = await conn.new_session(cwd=str(tmp_path))
        prompt = asyncio.create_task(
            conn.prompt(session_id=session.session_id, prompt=[text_block("think")])
        )
        await asyncio.sleep(0.2)  # the prompt is sent; its run may not have started yet
        await conn.cancel(session_id=session.session_id)
        result = await asyncio.wait_for(prompt, 15)
    assert result.stop_reason == "cancelled" and editor.text() == ""


async def test_no_answer_is_an_error_and_a_cut_one_stops_for_max_tokens(tmp_path: Path) -> None:
    """An empty answer would read as a silent end of turn: the editor gets an error."""
    editor = Editor(allow=True)
    replies: list[Any] = [{"text": "The tide comes in tw", "finish": "length"}, ""]
    project = tmp_path / "project"
    project.mkdir()
    (project / "agent.yaml").write_text("name: plain\n", encoding="utf-8")
    async with spawn_agent_process(
        cast(Client, editor),
        sys.executable,
        "-m",
        "raf.cli",
        "acp",
        str(project / "agent.yaml"),
        "--model",
        script(tmp_path, replies),
        env=raf_env(tmp_path),
        cwd=project,
    ) as (conn, _process):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        session = await conn.new_session(cwd=str(tmp_path))
        prompt = [text_block("tides?")]
        cut = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=prompt), 30)
        assert cut.stop_reason == "max_tokens" and editor.text() == "The tide comes in tw"
        with pytest.raises(RequestError) as info:
            await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=prompt), 30)
        assert "finished without an answer" in str(info.value.data or info.value)
