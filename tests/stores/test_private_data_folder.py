"""Every file and folder raf creates for a user's data is private: 0600 files in 0700
folders, whatever the umask lets other programs make. One walk over a fresh data folder
after raf has written each kind of data it keeps there: sessions and checkpoints (by the
`raf` program), eval cases saved from a conversation, eval reports (JSON and HTML),
cassettes, memory pages and the curator's queue, wiki pages, compressed transcripts and
OAuth tokens."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from raf.context.compression.summarize import SummarizationStrategy
from raf.context.memory.journal import JobJournal
from raf.context.memory.store import MemoryStore
from raf.context.wiki.store import Wiki
from raf.core.contents import TextContent
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.evals.case import Case
from raf.evals.cassette import CassetteChatClient
from raf.evals.dataset import Dataset
from raf.evals.folder import DatasetFolder
from raf.evals.report import EvalReport
from raf.evals.store import EvalRunStore
from raf.testing import ScriptedChatClient
from raf.tools.mcp.oauth import FileTokenStore
from tests.cli.helpers import raf, script, write_agent

WORKFLOW = """
kind: Workflow
trigger:
  kind: OnConversationStart
  id: start
  actions:
    - kind: SendActivity
      id: hello
      activity: hello
"""


@pytest.fixture
def shared_umask() -> Iterator[None]:
    """The umask most systems have: without raf's care, files 0644, folders 0755."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _not_private(root: Path) -> list[str]:
    wrong: list[str] = []
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            mode = stat.S_IMODE(os.lstat(os.path.join(folder, name)).st_mode)
            if mode != 0o700:
                wrong.append(f"{os.path.relpath(os.path.join(folder, name), root)}/ {mode:04o}")
        for name in files:
            mode = stat.S_IMODE(os.lstat(os.path.join(folder, name)).st_mode)
            if mode != 0o600:
                wrong.append(f"{os.path.relpath(os.path.join(folder, name), root)} {mode:04o}")
    return wrong


@pytest.mark.slow
def test_a_fresh_data_folder_is_private(tmp_path: Path, shared_umask: None) -> None:
    data = tmp_path / "data"  # the folder raf_env() points RAF_DATA_DIR at
    write_agent(tmp_path, "name: helper\ninstructions: Be brief.\n")
    done = raf(tmp_path, "run", "agent.yaml", "hi", "--model", script(tmp_path, ["hello"]))
    assert done.returncode == 0, done.stderr
    assert (data / "sessions.sqlite").exists()
    write_agent(tmp_path, WORKFLOW, "flow.yaml")
    done = raf(tmp_path, "run", "flow.yaml", "go", "--model", script(tmp_path, ["x"], "w.json"))
    assert done.returncode == 0, done.stderr
    assert (data / "checkpoints.sqlite").exists()

    evals = data / "evals"
    DatasetFolder(evals / "datasets").add_case(
        "from-chat", Case(name="turn-1", input="my account number is 12345")
    )
    report = EvalReport(name="r", dataset="d", target="helper")
    EvalRunStore(evals).save(report)
    report.write_json(evals / "reports" / "r.json")
    Dataset(name="d", cases=[Case(name="c", input="q")]).save(evals / "saved" / "d.yaml")
    cassette = CassetteChatClient(
        evals / "tapes" / "t.json", ScriptedChatClient(["taped"]), mode="record"
    )
    asyncio.run(
        cassette.get_response(
            [ChatMessage(role=Role.USER, contents=[TextContent(text="q")])], ChatOptions()
        )
    )

    memory = MemoryStore(data / "memory" / "user-1")
    memory.seed()
    memory.write("notes/today.md", "the user's secret plans")
    JobJournal(memory.root).record("s-1", [{"role": "user", "text": "remember this"}])
    Wiki(data / "wiki").create("Plans", "the team's plans")
    strategy = SummarizationStrategy(
        ScriptedChatClient(["summary"]), transcript_dir=data / "transcripts" / "a"
    )
    strategy._save([ChatMessage(role=Role.USER, contents=[TextContent(text="a private turn")])])
    asyncio.run(FileTokenStore(data / "mcp" / "tokens.json")._update("tokens", {"t": "x"}))

    assert _not_private(data) == []
