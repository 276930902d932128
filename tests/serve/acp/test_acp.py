"""ACP end to end: the SDK's client side drives `raf acp FILE` over a real subprocess."""

from __future__ import annotations

import asyncio
import base64
import json
import os
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


async def spawn(editor: Editor, agent_file: Path, model: str, tmp_path: Path) -> Any:
    """`raf acp` on `agent_file` as a real subprocess, the editor on the client side."""
    return spawn_agent_process(
        cast(Client, editor),
        sys.executable,
        "-m",
        "raf.cli",
        "acp",
        str(agent_file),
        "--model",
        model,
        env=raf_env(tmp_path),
        cwd=agent_file.parent,
    )


async def drive(tmp_path: Path, editor: Editor, replies: list[Any], *prompts: str) -> Any:
    project = tmp_path / "project"
    project.mkdir()
    (project / "agent.yaml").write_text(APPROVING_AGENT, encoding="utf-8")
    (tmp_path / "outside.txt").write_text("outside text")
    model = script(tmp_path, replies)
    async with await spawn(editor, project / "agent.yaml", model, tmp_path) as (conn, _process):
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
    async with await spawn(editor, tmp_path / "agent.yaml", model, tmp_path) as (conn, _process):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        with pytest.raises(RequestError) as info:
            await asyncio.wait_for(conn.prompt(session_id="nope", prompt=[text_block("hi")]), 30)
        assert "no session named 'nope'" in str(info.value.data or info.value)


async def test_a_stored_session_is_replayed_by_session_load(tmp_path: Path) -> None:
    first = Editor(allow=True)
    sid, _, _ = await drive(tmp_path, first, ["Remember the number 7."], "a number please")
    later = Editor(allow=True)
    project = tmp_path / "project"
    async with await spawn(
        later, project / "agent.yaml", script(tmp_path, ["unused"], name="later.json"), tmp_path
    ) as (conn, _process):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        await asyncio.wait_for(conn.load_session(cwd=str(project), session_id=sid), 30)
        replayed = [(u.session_update, u.content.text) for u in later.updates]
    assert replayed == [
        ("user_message_chunk", "a number please"),
        ("agent_message_chunk", "Remember the number 7."),
    ]


async def test_the_text_of_several_model_calls_is_joined_live_and_replayed(
    tmp_path: Path,
) -> None:
    editor = Editor(allow=True)
    checking = {"text": "Let me check.", **READ}
    sid, _, _ = await drive(tmp_path, editor, [checking, "It says: outside text"], "read")
    joined = "Let me check.\n\nIt says: outside text"  # as every other surface gives it
    assert editor.text() == joined
    later = Editor(allow=True)
    project = tmp_path / "project"
    async with await spawn(
        later, project / "agent.yaml", script(tmp_path, ["unused"], name="later.json"), tmp_path
    ) as (conn, _process):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        await asyncio.wait_for(conn.load_session(cwd=str(project), session_id=sid), 30)
    assert later.text() == joined


async def test_session_cancel_stops_a_running_prompt(tmp_path: Path) -> None:
    editor = Editor(allow=True)
    (tmp_path / "agent.yaml").write_text("name: plain\n", encoding="utf-8")
    model = script(tmp_path, [{"text": "too late", "delay": 30}])
    async with await spawn(editor, tmp_path / "agent.yaml", model, tmp_path) as (conn, _process):
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
    async with await spawn(editor, project / "agent.yaml", script(tmp_path, replies), tmp_path) as (
        conn,
        _process,
    ):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        session = await conn.new_session(cwd=str(tmp_path))
        prompt: list[Any] = [text_block("tides?")]
        cut = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=prompt), 30)
        assert cut.stop_reason == "max_tokens" and editor.text() == "The tide comes in tw"
        with pytest.raises(RequestError) as info:
            await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=prompt), 30)
        assert "finished without an answer" in str(info.value.data or info.value)


# -- what an editor can show: tool kinds, locations, results, replays, prompt blocks ------

CODER = """
name: coder
instructions: You edit files.
contexts:
  - kind: workspace
    name: project
    config: {root: .}
tools:
  - kind: file
"""
"""An agent with the ten file tools on its folder (no approval inside it)."""

EDITS = [
    {"calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}, "id": "r1"}]},
    {
        "calls": [
            {
                "name": "edit_file",
                "arguments": {"path": "notes.txt", "old_string": "draft", "new_string": "final"},
                "id": "e1",
            }
        ]
    },
    {
        "calls": [
            {
                "name": "write_file",
                "arguments": {"path": "new.txt", "content": "fresh\n"},
                "id": "w1",
            }
        ]
    },
    {"calls": [{"name": "find_files", "arguments": {"pattern": "*.txt"}, "id": "f1"}]},
    {
        "calls": [
            {
                "name": "move_file",
                "arguments": {"source": "new.txt", "destination": "moved.txt"},
                "id": "m1",
            }
        ]
    },
    {"calls": [{"name": "remove_path", "arguments": {"path": "moved.txt"}, "id": "d1"}]},
    "Done.",
]


def coder_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "agent.yaml").write_text(CODER, encoding="utf-8")
    (project / "notes.txt").write_text("a draft note\n", encoding="utf-8")
    return project


def tool_messages(editor: Editor) -> dict[str, list[Any]]:
    """Every tool_call and tool_call_update the editor was sent, by call id."""
    out: dict[str, list[Any]] = {}
    for update in editor.updates:
        if update.session_update in ("tool_call", "tool_call_update"):
            out.setdefault(update.tool_call_id, []).append(update)
    return out


def content_of(update: Any) -> list[dict[str, Any]]:
    return [c.model_dump(by_alias=True, exclude_none=True) for c in update.content or []]


async def test_tool_calls_show_kind_locations_diffs_and_results(tmp_path: Path) -> None:
    project = coder_project(tmp_path)
    editor = Editor(allow=True)
    async with await spawn(editor, project / "agent.yaml", script(tmp_path, EDITS), tmp_path) as (
        conn,
        _process,
    ):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        session = await conn.new_session(cwd=str(project))
        result = await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[text_block("tidy up")]), 60
        )
    assert result.stop_reason == "end_turn" and editor.asked == []
    calls = tool_messages(editor)
    starts = {call: updates[0] for call, updates in calls.items()}
    assert all(u.session_update == "tool_call" for u in starts.values())
    assert {call: u.kind for call, u in starts.items()} == {
        "r1": "read",
        "e1": "edit",
        "w1": "edit",
        "f1": "search",
        "m1": "move",
        "d1": "delete",
    }
    at = os.path.normpath
    assert [loc.path for loc in starts["r1"].locations] == [at(project / "notes.txt")]
    assert [loc.path for loc in starts["m1"].locations] == [
        at(project / "new.txt"),
        at(project / "moved.txt"),
    ]
    # every result carries content an editor shows; an edit's is its diff, then the text
    done = {call: updates[-1] for call, updates in calls.items()}
    assert all(u.status == "completed" for u in done.values())
    read = content_of(done["r1"])
    assert read[0]["type"] == "content" and "a draft note" in read[0]["content"]["text"]
    edit = content_of(done["e1"])
    assert edit[0] == {
        "type": "diff",
        "path": at(project / "notes.txt"),
        "oldText": "draft",
        "newText": "final",
    }
    assert "replaced 1 occurrence" in edit[1]["content"]["text"]
    wrote = content_of(done["w1"])
    assert wrote[0] == {"type": "diff", "path": at(project / "new.txt"), "newText": "fresh\n"}
    assert content_of(starts["w1"]) == [wrote[0]]  # the diff is shown as the call starts
    assert "notes.txt" in content_of(done["f1"])[0]["content"]["text"]
    assert (project / "notes.txt").read_text() == "a final note\n"


async def test_session_load_replays_tool_calls_with_their_results(tmp_path: Path) -> None:
    project = coder_project(tmp_path)
    first = Editor(allow=True)
    async with await spawn(first, project / "agent.yaml", script(tmp_path, EDITS), tmp_path) as (
        conn,
        _process,
    ):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        session = await conn.new_session(cwd=str(project))
        await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[text_block("tidy up")]), 60
        )
    later = Editor(allow=True)
    model = script(tmp_path, ["unused"], name="later.json")
    async with await spawn(later, project / "agent.yaml", model, tmp_path) as (conn, _process):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        await asyncio.wait_for(
            conn.load_session(cwd=str(project), session_id=session.session_id), 30
        )
    kinds = [u.session_update for u in later.updates]
    assert kinds[0] == "user_message_chunk" and kinds[-1] == "agent_message_chunk"
    assert later.updates[0].content.text == "tidy up"
    assert later.updates[-1].content.text == "Done."
    replayed = [(what, call) for what, call in later.order]
    assert replayed == [
        (what, call)
        for call in ("r1", "e1", "w1", "f1", "m1", "d1")
        for what in ("tool_call", "tool_call_update")
    ]
    live, again = tool_messages(first), tool_messages(later)
    for call in ("r1", "e1", "w1", "f1", "m1", "d1"):
        assert again[call][0].kind == live[call][0].kind
        assert again[call][0].raw_input == live[call][0].raw_input
        assert again[call][-1].status == "completed"
        assert content_of(again[call][-1]) == content_of(live[call][-1])


PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
    "AAAABJRU5ErkJggg=="
)
"""A one-pixel PNG, base64."""


async def test_prompt_blocks_reach_the_model_and_capabilities_say_what_it_takes(
    tmp_path: Path,
) -> None:
    from acp import (
        embedded_blob_resource,
        embedded_text_resource,
        image_block,
        resource_block,
        resource_link_block,
    )

    project = coder_project(tmp_path)
    editor = Editor(allow=True)
    blocks = [
        text_block("Compare these."),
        resource_link_block("spec.md", "file:///work/spec.md", mime_type="text/markdown"),
        resource_block(embedded_text_resource("file:///work/a.py", "print(1)")),
        image_block(PNG, "image/png"),
        resource_block(
            embedded_blob_resource(
                "file:///work/doc.pdf", "JVBERi0xLjQK", mime_type="application/pdf"
            )
        ),
    ]
    model = script(tmp_path, ["Seen them."])
    async with await spawn(editor, project / "agent.yaml", model, tmp_path) as (conn, _process):
        init = await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        capabilities = init.agent_capabilities.prompt_capabilities
        assert (capabilities.image, capabilities.embedded_context) == (True, True)
        assert capabilities.audio is False  # only a model that declares audio takes it
        session = await conn.new_session(cwd=str(project))
        result = await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=blocks), 30
        )
        assert result.stop_reason == "end_turn" and editor.text() == "Seen them."
        editor.updates.clear()
        await asyncio.wait_for(
            conn.load_session(cwd=str(project), session_id=session.session_id), 30
        )
    # the model was sent the text, then the data (the PDF as a document)
    from raf.core.contents import DataContent, TextContent
    from raf.stores.sessions import SqliteSessionStore

    stored = await SqliteSessionStore(tmp_path / "data" / "sessions.sqlite").load(
        session.session_id
    )
    sent = stored.messages[0].contents
    assert isinstance(sent[0], TextContent) and sent[0].text == (
        "Compare these.\n\n[spec.md](file:///work/spec.md) (text/markdown)\n\n"
        '<context uri="file:///work/a.py">\nprint(1)\n</context>'
    )
    assert [c.media_type for c in sent[1:] if isinstance(c, DataContent)] == [
        "image/png",
        "application/pdf",
    ]
    # the editor is shown the blocks it sent
    told = [u.content for u in editor.updates if u.session_update == "user_message_chunk"]
    assert told == blocks


async def test_a_text_only_model_refuses_images_by_name_and_the_session_stays_clean(
    tmp_path: Path,
) -> None:
    from acp import image_block

    project = coder_project(tmp_path)
    editor = Editor(allow=True)
    path = tmp_path / "text-only.json"
    path.write_text(json.dumps({"replies": ["Text is fine."], "mediaTypes": []}))
    async with await spawn(editor, project / "agent.yaml", f"scripted:{path}", tmp_path) as (
        conn,
        _process,
    ):
        init = await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        capabilities = init.agent_capabilities.prompt_capabilities
        assert (capabilities.image, capabilities.audio) == (False, False)
        assert capabilities.embedded_context is True
        session = await conn.new_session(cwd=str(project))
        with pytest.raises(RequestError) as info:
            await asyncio.wait_for(
                conn.prompt(
                    session_id=session.session_id,
                    prompt=[text_block("What is this?"), image_block(PNG, "image/png")],
                ),
                30,
            )
        assert info.value.code == -32602
        message = str(info.value.data or info.value)
        assert "prompt[1] (image, image/png)" in message and "text only" in message
        result = await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[text_block("Just text.")]), 30
        )
        assert result.stop_reason == "end_turn" and editor.text() == "Text is fine."
        editor.updates.clear()
        await asyncio.wait_for(
            conn.load_session(cwd=str(project), session_id=session.session_id), 30
        )
    assert [(u.session_update, u.content.text) for u in editor.updates] == [
        ("user_message_chunk", "Just text."),
        ("agent_message_chunk", "Text is fine."),
    ]


async def test_oversize_prompt_blocks_are_refused_with_the_limit(tmp_path: Path) -> None:
    from acp import embedded_text_resource, image_block, resource_block

    from raf.clients.media import MAX_BYTES
    from raf.serve.acp.parts import MAX_TEXT_RESOURCE_BYTES

    project = coder_project(tmp_path)
    editor = Editor(allow=True)
    big_image = base64.b64encode(b"\0" * (MAX_BYTES["image"] + 1)).decode("ascii")
    big_text = "x" * (MAX_TEXT_RESOURCE_BYTES + 1)
    async with await spawn(editor, project / "agent.yaml", script(tmp_path, ["ok"]), tmp_path) as (
        conn,
        _process,
    ):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        session = await conn.new_session(cwd=str(project))
        refused = []
        for block in (
            image_block(big_image, "image/png"),
            resource_block(embedded_text_resource("file:///big.log", big_text)),
        ):
            with pytest.raises(RequestError) as info:
                await asyncio.wait_for(
                    conn.prompt(session_id=session.session_id, prompt=[block]), 120
                )
            assert info.value.code == -32602
            refused.append(str(info.value.data or info.value))
    assert "prompt[0] (image, image/png)" in refused[0]
    assert f"the most sent is {MAX_BYTES['image']} bytes (20 MiB)" in refused[0]
    assert "prompt[0] (resource file:///big.log)" in refused[1]
    assert f"{MAX_TEXT_RESOURCE_BYTES} bytes (4 MiB)" in refused[1]


async def test_how_a_call_is_shown_is_forgotten_once_its_result_is_sent(tmp_path: Path) -> None:
    """An edit's diff holds the text written: it is kept until the call's result only."""
    from raf import Agent, tool
    from raf.serve.acp.agent import RafAcpAgent
    from raf.testing import ScriptedChatClient, call, reply

    @tool
    def write_file(path: str, content: str) -> str:
        """Write a file."""
        return f"wrote {len(content)} characters to {path}"

    model = ScriptedChatClient(
        [
            reply("", call("write_file", {"path": "a.txt", "content": "x" * 1000}, call_id="w1")),
            "Done.",
        ]
    )
    served = RafAcpAgent(Agent(name="coder", chat_client=model, tools=[write_file]))
    editor = Editor(allow=True)
    served.on_connect(cast(Any, editor))
    session = await served.new_session(cwd=str(tmp_path))
    result = await served.prompt(session.session_id, [text_block("write a.txt")])
    assert result.stop_reason == "end_turn"
    assert editor.order[0] == ("tool_call", "w1") and editor.order[-1][1] == "w1"
    done = editor.updates[-2]  # the call's result, then the answer's text
    assert done.session_update == "tool_call_update" and done.status == "completed"
    assert served.shown == {}


async def test_session_load_in_a_new_process_replays_each_prompt_block_as_sent(
    tmp_path: Path,
) -> None:
    from acp import (
        embedded_blob_resource,
        embedded_text_resource,
        image_block,
        resource_block,
        resource_link_block,
    )

    project = coder_project(tmp_path)
    blocks = [
        text_block("Compare these."),
        resource_link_block(
            "spec.md",
            "file:///work/spec.md",
            mime_type="text/markdown",
            title="The spec",
            description="what we build",
            size=1234,
        ),
        resource_block(
            embedded_text_resource("file:///work/a.py", "print(1)", mime_type="text/x-python")
        ),
        resource_block(
            embedded_blob_resource(
                "file:///work/doc.pdf", "JVBERi0xLjQK", mime_type="application/pdf"
            )
        ),
        image_block(PNG, "image/png", uri="file:///work/dot.png"),
        text_block("Thanks."),
    ]
    first = Editor(allow=True)
    model = script(tmp_path, ["Seen them.", "Again."])
    async with await spawn(first, project / "agent.yaml", model, tmp_path) as (conn, _process):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        session = await conn.new_session(cwd=str(project))
        for prompt in (blocks, [text_block("And now?")]):
            result = await asyncio.wait_for(
                conn.prompt(session_id=session.session_id, prompt=prompt), 30
            )
            assert result.stop_reason == "end_turn"
    later = Editor(allow=True)
    unused = script(tmp_path, ["unused"], name="later.json")
    async with await spawn(later, project / "agent.yaml", unused, tmp_path) as (conn, _process):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 30)
        await asyncio.wait_for(
            conn.load_session(cwd=str(project), session_id=session.session_id), 30
        )

    def dumped(block: Any) -> dict[str, Any]:
        return cast(dict[str, Any], block.model_dump(mode="json", by_alias=True, exclude_none=True))

    replayed = [(u.session_update, dumped(u.content)) for u in later.updates]
    assert replayed == [
        *[("user_message_chunk", dumped(block)) for block in blocks],
        ("agent_message_chunk", {"type": "text", "text": "Seen them."}),
        ("user_message_chunk", {"type": "text", "text": "And now?"}),
        ("agent_message_chunk", {"type": "text", "text": "Again."}),
    ]
