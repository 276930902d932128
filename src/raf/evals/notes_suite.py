"""The notes-folder eval of the keyless agent: a small folder of notes, the workspace's
file tools over it, and ten questions in a new user's words (`datasets/notes_folder.yaml`),
each right only with the right tool, the right arguments and an answer from the result.
A held-out check (`datasets/notes_heldout.yaml`, on the `HELDOUT` folder) asks ten more in
other words, on other files: it is never used to tune the agent, only to check it."""

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
HELDOUT_FILE = "notes_heldout.yaml"
NOTES = {
    "notes/todo.md": "1. Call the dentist\n2. Buy oat milk\n3. Water the plants\n",
    "notes/groceries.txt": "eggs\nbread\napples\n",
    "notes/x.txt": "alpha\nbeta\ngamma\ndelta\n",
    "notes/ideas.md": "A bike with square wheels.\n",
    "agent.yaml": "name: helper\ninstructions: Be brief.\n",
}
"""The folder every case starts from (written afresh for each run)."""
HELDOUT = {
    "recipes/pancakes.md": "Pancakes\n- 2 eggs\n- 1 cup flour\n- 1 cup milk\n",
    "recipes/soup.txt": "Tomato soup\nSimmer for 20 minutes.\n",
    "journal/monday.txt": "Went running.\nMet Ana for lunch.\nRead a book.\n",
    "journal/tuesday.txt": "Rained all day.\n",
    "readme.md": "My recipes and my journal.\n",
}
"""The folder of the held-out check."""


def make_notes(root: Path, files: dict[str, str] | None = None) -> Path:
    """Write the notes folder (or `files`: the held-out one) under `root`; return `root`."""
    for name, text in (NOTES if files is None else files).items():
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


def dataset_path(name: str = DATASET_FILE) -> Path:
    return Path(str(resources.files("raf.evals") / "datasets" / name))


def notes_dataset() -> Dataset:
    """The shipped notes-folder cases."""
    return Dataset.from_file(dataset_path())


def heldout_dataset() -> Dataset:
    """The held-out cases, asked on the `HELDOUT` folder."""
    return Dataset.from_file(dataset_path(HELDOUT_FILE))
