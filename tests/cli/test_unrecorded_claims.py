"""`raf run` on a session whose approved call was claimed by a run that never recorded its
result (killed): a new prompt goes on, a repeated approval is refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

from raf import AgentSession, ApprovalRequestContent, ChatMessage, SqliteSessionStore
from raf.testing import call, reply

from .helpers import raf, script, write_agent

SIMPLE = "name: helper\ninstructions: You help.\n"


def _claimed_session(tmp_path: Path) -> SqliteSessionStore:
    store = SqliteSessionStore(tmp_path / "data" / "sessions.sqlite")
    session = AgentSession(
        id="s1",
        messages=[ChatMessage.user("delete x"), reply("", call("delete", name="x", call_id="c1"))],
        pending_approvals=[ApprovalRequestContent(call_id="c1", name="delete", arguments={})],
        spent_approvals=["c1"],  # claimed, then the claiming process died
    )
    (tmp_path / "data").mkdir(exist_ok=True)
    asyncio.run(store.save(session))
    return store


def test_a_prompt_goes_on_and_an_approval_is_refused(tmp_path: Path):
    store = _claimed_session(tmp_path)
    write_agent(tmp_path, SIMPLE)
    model = script(tmp_path, ["Unknown whether x was deleted."])
    again = raf(
        tmp_path, "run", "agent.yaml", "--session", "s1", "--approve", "all", "--model", model
    )
    assert again.returncode == 1
    assert "claimed by another run" in again.stderr and "'c1'" in again.stderr

    done = raf(tmp_path, "run", "agent.yaml", "what happened?", "--session", "s1", "--model", model)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Unknown whether x was deleted.\n"
    stored = asyncio.run(store.load("s1"))
    assert stored.pending_approvals == []
    [result] = [c for m in stored.messages for c in m.function_results]
    assert result.call_id == "c1" and "whether the call ran is unknown" in (result.error or "")
