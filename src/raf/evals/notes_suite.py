"""The notes-folder eval of the keyless agent: a small folder of notes, the workspace's
file tools over it, and ten questions in a new user's words (`datasets/notes_folder.yaml`),
each right only with the right tool, the right arguments and an answer from the result."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from raf.agent.agent import Agent
from raf.context.workspace import WorkspaceContextProvider
from raf.core.chat_client import ChatClient
from raf.core.options import ChatOptions
from raf.evals.dataset import Dataset
from raf.tools.files import file_tools
from raf.tools.workspace import WorkspaceScope

DATASET_FILE = "notes_folder.yaml"
NOTES = {
    "notes/todo.md": "1. Call the dentist\n2. Buy oat milk\n3. Water the plants\n",
    "notes/groceries.txt": "eggs\nbread\napples\n",
    "notes/x.txt": "alpha\nbeta\ngamma\ndelta\n",
    "notes/ideas.md": "A bike with square wheels.\n",
    "agent.yaml": "name: helper\ninstructions: Be brief.\n",
}
"""The folder every case starts from (written afresh for each run)."""


def make_notes(root: Path) -> Path:
    """Write the notes folder under `root` and return `root`."""
    for name, text in NOTES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def notes_agent(client: ChatClient, root: Path, *, max_tokens: int = 80) -> Agent:
    """The agent the dataset is run on: the file tools (no shell) over `root`, writes
    allowed inside it, short answers."""
    workspace = WorkspaceContextProvider(WorkspaceScope(root, policy="deny"))
    workspace.add_tools([t for t in file_tools() if t.kind == "file"])
    return Agent(
        chat_client=client,
        instructions="You are a helpful assistant for the user's notes folder. Be brief.",
        context_providers=[workspace],
        name="notes",
        max_tool_rounds=3,
        default_options=ChatOptions(max_tokens=max_tokens),
    )


def dataset_path() -> Path:
    return Path(str(resources.files("raf.evals") / "datasets" / DATASET_FILE))


def notes_dataset() -> Dataset:
    """The shipped notes-folder cases."""
    return Dataset.from_file(dataset_path())
