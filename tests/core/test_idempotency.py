"""Each tool call gets an idempotency key: the same on every retry of the call, another
for any other call, session or durable run; raf's file tools use it so a retried write or
edit changes nothing, and a command reads it from its environment."""

from __future__ import annotations

from pathlib import Path

from raf import AgentBuilder, AgentSession, FunctionInvokingChatClient, ToolContext, tool
from raf.core.contents import TextContent
from raf.core.idempotency import idempotency_scope, tool_call_key
from raf.core.messages import ChatMessage, Role
from raf.core.tools import ToolResult
from raf.testing import ScriptedChatClient, call, reply
from raf.tools.files import EditFile, WriteFile
from raf.tools.workspace import WorkspaceScope

KEYS: list[str] = []


@tool
def pay(amount: int, context: ToolContext) -> str:
    """Pay an amount."""
    KEYS.append(context.idempotency_key)
    return f"paid {amount}"


def scripted() -> ScriptedChatClient:
    return ScriptedChatClient(
        [
            reply("", call("pay", amount=1, call_id="c1"), call("pay", amount=2, call_id="c2")),
            "done",
        ]
    )


async def test_a_call_is_keyed_by_its_session_and_call_id() -> None:
    KEYS.clear()
    agent = AgentBuilder().with_chat_client(scripted()).with_tool(pay)
    await agent.build().run("pay", session=AgentSession(id="s-1"))
    first, second = KEYS
    assert first != second
    # derived, not drawn: a retry of the call (the same call in the same session) gets it
    assert first == tool_call_key("c1", session_id="s-1")
    assert second == tool_call_key("c2", session_id="s-1")
    assert first.startswith("raf-") and len(first) == 36

    KEYS.clear()  # another session, the same call ids: other keys
    agent = AgentBuilder().with_chat_client(scripted()).with_tool(pay)
    await agent.build().run("pay", session=AgentSession(id="s-2"))
    assert KEYS[0] != first and KEYS[0] == tool_call_key("c1", session_id="s-2")


def test_a_durable_scope_gives_keys_of_its_own() -> None:
    plain = tool_call_key("c1", session_id="s")
    with idempotency_scope("durable:run-1"):
        durable = tool_call_key("c1", session_id="s")
        assert durable == tool_call_key("c1", session_id="other")
    assert durable != plain
    with idempotency_scope("durable:run-2"):
        assert tool_call_key("c1", session_id="s") != durable


async def test_a_retried_write_or_edit_with_the_same_key_changes_nothing(tmp_path: Path) -> None:
    scope = WorkspaceScope(tmp_path, policy="deny")
    write, edit = WriteFile(scope=scope), EditFile(scope=scope)
    ctx = ToolContext(idempotency_key="raf-write-1")

    first: ToolResult = await write.invoke({"path": "n.txt", "content": "x"}, ctx)
    assert first.value == "created n.txt (1 bytes)"
    again = await write.invoke({"path": "n.txt", "content": "x"}, ctx)
    assert again.value == first.value  # the same answer: "created", not "replaced"

    edit_ctx = ToolContext(idempotency_key="raf-edit-1")
    args = {"path": "n.txt", "old_string": "x", "new_string": "xy"}
    edited = await edit.invoke(args, edit_ctx)
    assert edited.value == "replaced 1 occurrence(s) in n.txt"
    retried = await edit.invoke(args, edit_ctx)  # would make "xyy" if applied again
    assert retried.value == edited.value and (tmp_path / "n.txt").read_text() == "xy"

    other = await edit.invoke(args, ToolContext(idempotency_key="raf-edit-2"))
    assert other.value == "replaced 1 occurrence(s) in n.txt"  # another call: it applies
    assert (tmp_path / "n.txt").read_text() == "xyy"

    (tmp_path / "n.txt").write_text("changed by someone")  # the mark no longer matches
    rewritten = await write.invoke({"path": "n.txt", "content": "x"}, ctx)
    assert rewritten.value == "replaced n.txt (1 bytes)"
    assert (tmp_path / "n.txt").read_text() == "x"


async def test_runs_without_a_session_never_share_a_key() -> None:
    """A tool loop without a session (`FunctionInvokingChatClient`, five times over, each
    run freed before the next, so Python could hand the next one the same address) keys
    its calls by the run's random id: five runs, call id "c1" each time, five keys."""
    seen: list[tuple[str, str]] = []

    @tool
    def charge(amount: int, context: ToolContext) -> str:
        """Charge an amount."""
        assert context.run is not None and context.session is None
        seen.append((context.idempotency_key, context.run.run_id))
        return f"charged {amount}"

    for _ in range(5):
        scripted = ScriptedChatClient([reply("", call("charge", amount=1, call_id="c1")), "done"])
        loop = FunctionInvokingChatClient(scripted, tools=[charge])
        await loop.get_response([ChatMessage(role=Role.USER, contents=[TextContent(text="pay")])])
    keys = [key for key, _ in seen]
    assert len(keys) == 5 and len(set(keys)) == 5
    # made from the run's random id, so a retry within the run gets the same key
    for key, run_id in seen:
        assert key == tool_call_key("c1", session_id=None, run_id=run_id)


def test_a_run_id_is_random_and_stable() -> None:
    from raf.core.run_context import RunContext

    first, second = RunContext(), RunContext()
    assert first.run_id == first.run_id and len(first.run_id) == 32
    assert first.run_id != second.run_id
    assert tool_call_key("c1", session_id=None, run_id=first.run_id) == tool_call_key(
        "c1", session_id=None, run_id=first.run_id
    )
