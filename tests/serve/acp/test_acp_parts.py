"""How raf's tool calls are shown to an editor over ACP, judged without a server: the
kind of every built-in tool, a user tool's declared kind, the name as the fallback."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from raf.core.contents import FunctionResultContent
from raf.core.errors import ToolDefinitionError
from raf.core.function_tool import TOOL_ACTIONS, tool
from raf.core.tools import ApprovalRequiredTool
from raf.serve.acp.parts import kind_from_name, show_call
from raf.tools.code import CodeInterpreter
from raf.tools.files import (
    EditFile,
    InspectFile,
    ListFiles,
    MakeDirectory,
    MoveFile,
    ReadFile,
    RemovePath,
    WriteFile,
)
from raf.tools.search import FindFiles, SearchFile
from raf.tools.shell import RunCommand
from raf.tools.web import WebFetch
from raf.tools.workspace import WorkspaceScope


def test_every_built_in_tool_has_the_kind_of_what_it_does(tmp_path: Path) -> None:
    scope = WorkspaceScope(tmp_path)
    calls: list[tuple[Any, dict[str, Any], str]] = [
        (ReadFile(scope), {"path": "a.txt"}, "read"),
        (ListFiles(scope), {}, "read"),
        (InspectFile(scope), {"path": "a.txt"}, "read"),
        (WriteFile(scope), {"path": "a.txt", "content": "x"}, "edit"),
        (EditFile(scope), {"path": "a.txt", "old_string": "a", "new_string": "b"}, "edit"),
        (MakeDirectory(scope), {"path": "d"}, "edit"),
        (RemovePath(scope), {"path": "a.txt"}, "delete"),
        (MoveFile(scope), {"source": "a.txt", "destination": "b.txt"}, "move"),
        (FindFiles(scope), {"pattern": "*.py"}, "search"),
        (SearchFile(scope), {"pattern": "def "}, "search"),
        (RunCommand(scope), {"command": "ls"}, "execute"),
        (CodeInterpreter(), {"code": "1"}, "execute"),
        (WebFetch(), {"url": "https://example.com"}, "fetch"),
    ]
    kinds = [show_call(t, t.name, args).kind for t, args, _ in calls]
    assert kinds == [kind for _, _, kind in calls]
    assert show_call(None, "web_search", {}).kind == "search"
    moved = show_call(MoveFile(scope), "move_file", {"source": "a", "destination": "sub/b"})
    assert moved.locations == [os.path.normpath(tmp_path / "a"), str(tmp_path / "sub" / "b")]


def test_a_user_tool_declares_its_kind_or_its_name_says_it() -> None:
    @tool(action="think")
    def note_to_self(thought: str) -> str:
        """Write down a thought."""
        return thought

    @tool
    def fetch_invoice(number: int) -> str:
        """Fetch an invoice."""
        return str(number)

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    assert show_call(note_to_self, "note_to_self", {"thought": "x"}).kind == "think"
    guarded = ApprovalRequiredTool(note_to_self)  # a wrapper keeps what it wraps declares
    assert show_call(guarded, "note_to_self", {"thought": "x"}).kind == "think"
    assert show_call(fetch_invoice, "fetch_invoice", {"number": 1}).kind == "fetch"
    assert show_call(add, "add", {"a": 1, "b": 2}).kind == "other"
    assert [kind_from_name(n) for n in ("grepLogs", "deleteUser", "rename-branch")] == [
        "search",
        "delete",
        "move",
    ]

    def wipe(path: str) -> str:
        """Wipe a disk."""
        return path

    with pytest.raises(ToolDefinitionError, match="'wipe': action must be one of read, edit"):
        tool(action="destroy")(wipe)
    assert "other" in TOOL_ACTIONS


def test_an_edit_shows_its_diff_and_a_failed_one_only_the_error(tmp_path: Path) -> None:
    shown = show_call(
        EditFile(WorkspaceScope(tmp_path)),
        "edit_file",
        {"path": "a.txt", "old_string": "old", "new_string": "new"},
    )
    path = os.path.normpath(tmp_path / "a.txt")
    ok = FunctionResultContent(call_id="e", result="replaced 1 occurrence(s) in a.txt")
    dumped = [c.model_dump(by_alias=True) for c in shown.result_content(ok)]
    assert dumped[0] == {
        "type": "diff",
        "path": path,
        "oldText": "old",
        "newText": "new",
        "_meta": None,
    }
    assert dumped[1]["content"]["text"] == "replaced 1 occurrence(s) in a.txt"
    failed = FunctionResultContent(call_id="e", error="old_string was not found")
    (only,) = shown.result_content(failed)
    assert only.content.text == "Error: old_string was not found"


# -- prompts kept for session/load --------------------------------------------------------

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
    "AAAABJRU5ErkJggg=="
)


def _prompt() -> list[Any]:
    from acp import embedded_blob_resource, image_block, resource_block, text_block

    return [
        text_block("Look."),
        image_block(PNG, "image/png"),
        resource_block(
            embedded_blob_resource("file:///d.pdf", "JVBERi0xLjQK", mime_type="application/pdf")
        ),
    ]


def test_a_kept_prompt_holds_no_payload_twice_and_replays_as_sent() -> None:
    import json

    from raf.core.sessions import AgentSession
    from raf.serve.acp.parts import (
        PROMPTS_KEY,
        keep_prompt,
        kept_blocks,
        prompt_message,
        replayed_prompt,
    )

    blocks = _prompt()
    message = prompt_message(blocks, None)
    message.message_id = "msg_1"
    session = AgentSession()
    keep_prompt(session, "gone", [])  # a prompt whose run stored no message
    keep_prompt(session, "msg_1", kept_blocks(blocks))
    session.messages.append(message)
    assert list(session.metadata[PROMPTS_KEY]) == ["msg_1"]  # the orphan was dropped
    kept = json.dumps(session.metadata[PROMPTS_KEY])
    assert PNG not in kept and "JVBERi0xLjQK" not in kept  # the message holds them
    sent = replayed_prompt(session, message)
    assert sent is not None and [u.content for u in sent] == blocks


def test_a_message_without_a_kept_prompt_replays_as_before() -> None:
    from raf.core.messages import ChatMessage
    from raf.core.sessions import AgentSession
    from raf.serve.acp.parts import PROMPTS_KEY, kept_blocks, prompt_message, replayed_prompt

    old = AgentSession(messages=[ChatMessage.user("hi")])
    assert replayed_prompt(old, old.messages[0]) is None  # a session from before
    blocks = _prompt()
    message = prompt_message(blocks[:1], None)  # its data contents are not there
    message.message_id = "msg_1"
    changed = AgentSession(messages=[message])
    changed.metadata[PROMPTS_KEY] = {"msg_1": kept_blocks(blocks)}
    assert replayed_prompt(changed, message) is None
    changed.metadata[PROMPTS_KEY] = {"msg_1": [{"type": "nonsense"}]}
    assert replayed_prompt(changed, message) is None
