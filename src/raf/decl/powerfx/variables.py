"""The variables of a declarative workflow run: scoped paths such as `Local.total`,
`System.LastMessage.Text` or `Workflow.Inputs.age`, held as plain JSON data."""

from __future__ import annotations

import copy
import os
from typing import Any

from raf.core.errors import RafError

SCOPES = (
    "Local",
    "Global",
    "System",
    "Workflow",
    "Env",
    "Topic",
    "inputs",
    "ThisRecord",
    "ThisItem",
    "Agent",
)
"""Names a path may start with (in any case); `inputs` is `Workflow.Inputs`; `Topic` (and
`turn`) is `Local`; `Env.X` reads the environment variable X; `ThisRecord` (or
`ThisItem`) is the current row inside a table function; `Agent` is the answer of the
last agent the workflow invoked (`Agent.text`, `Agent.name`, `Agent.messages`)."""
WRITABLE = ("Local", "Global", "Workflow")
_CANONICAL = {s.lower(): s for s in SCOPES} | {"topic": "Local", "turn": "Local"}
_WORKFLOW_PARTS = {"inputs": "Inputs", "outputs": "Outputs"}


def canonical(parts: tuple[str, ...]) -> tuple[str, ...]:
    """A path with its scope spelled as raf keeps it: scopes in any case, `Topic.` and
    `turn.` as `Local.`, `inputs.` and `workflow.outputs.` under `Workflow`."""
    if not parts:
        return parts
    scope = _CANONICAL.get(parts[0].lower())
    if scope is None:
        return parts
    if scope == "inputs":
        return ("Workflow", "Inputs", *parts[1:])
    if scope == "Workflow" and len(parts) > 1:
        return ("Workflow", _WORKFLOW_PARTS.get(parts[1].lower(), parts[1]), *parts[2:])
    return (scope, *parts[1:])


def is_scope(name: str) -> bool:
    """Whether `name` starts a variable path (in any case)."""
    return name.lower() in _CANONICAL


class VariableError(RafError):
    """A variable path that names no scope, or one a workflow may not write."""


class UnsetEnvironmentVariable(VariableError):
    """An `Env.` variable read by a running workflow that the environment lacks."""


def split_path(path: str) -> tuple[str, ...]:
    """`Local.a.b` as its parts; `inputs.x` is read as `Workflow.Inputs.x`."""
    parts = tuple(p for p in path.strip().split("."))
    if any(not p for p in parts):
        raise VariableError(f"{path!r} is not a variable path (use Scope.name, e.g. Local.x)")
    return canonical(parts)


def check_writable(path: str) -> tuple[str, ...]:
    """The parts of a path an action may set; a clear error otherwise."""
    parts = split_path(path)
    if parts[0] not in WRITABLE or len(parts) < 2:
        raise VariableError(
            f"cannot set {path!r}: set a variable of Local, Global or Workflow.Outputs "
            "(for example Local.answer)"
        )
    if parts[0] == "Workflow" and (len(parts) < 3 or parts[1] != "Outputs"):
        raise VariableError(f"cannot set {path!r}: of Workflow, only Workflow.Outputs is set")
    return parts


def _environment(parts: tuple[str, ...]) -> Any:
    if len(parts) != 2:
        raise VariableError(f"{'.'.join(parts)!r}: read an environment variable as Env.NAME")
    value = os.environ.get(parts[1])
    if value is None:
        raise UnsetEnvironmentVariable(f"environment variable {parts[1]} is not set")
    return value


def _cell(row: Any, name: str) -> Any:
    """A row's cell in column `name`; a row that is not a record reads as `{Value: row}`."""
    if isinstance(row, dict):
        return row.get(name)
    return row if name == "Value" else None


class Variables:
    """All scopes of one run, as a JSON-ready mapping kept in checkpoints."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self.data: dict[str, Any] = data if data is not None else {}
        for scope in ("Local", "Global", "System"):
            self.data.setdefault(scope, {})
        workflow = self.data.setdefault("Workflow", {})
        workflow.setdefault("Inputs", {})
        workflow.setdefault("Outputs", {})

    def get(self, parts: tuple[str, ...] | str) -> Any:
        """The value at a path; a missing one is blank (None)."""
        return copy.deepcopy(self.peek(parts))

    def peek(self, parts: tuple[str, ...] | str) -> Any:
        """The value at a path as it is held, not copied: for looking at only (its size,
        say); `get` gives a copy to use."""
        parts = split_path(parts) if isinstance(parts, str) else canonical(parts)
        if parts and parts[0] == "Env":
            return _environment(parts)
        current: Any = self.data
        for part in parts:
            if isinstance(current, dict):
                current = current.get(part)
            elif isinstance(current, list) and part.isdigit():
                index = int(part)
                current = current[index] if index < len(current) else None
            elif isinstance(current, list):  # a column of the table: one cell per row
                current = [_cell(row, part) for row in current]
            elif part == "Value" and current is not None:  # a row of a one-column table
                continue
            else:
                return None
        return current

    def set(self, path: str, value: Any) -> None:
        """Set a writable path, creating the records on the way."""
        parts = check_writable(path)
        current = self.data
        for part in parts[:-1]:
            child = current.get(part)
            if not isinstance(child, dict):
                child = {}
                current[part] = child
            current = child
        current[parts[-1]] = copy.deepcopy(value)

    def reset(self, path: str) -> None:
        """Make a variable blank again."""
        parts = check_writable(path)
        current: Any = self.data
        for part in parts[:-1]:
            current = current.get(part) if isinstance(current, dict) else None
            if current is None:
                return
        if isinstance(current, dict):
            current.pop(parts[-1], None)

    def clear(self, scope: str = "Local") -> None:
        """Drop every variable of a scope (Local, Global or Workflow.Outputs)."""
        if scope not in ("Local", "Global", "Workflow.Outputs"):
            raise VariableError(f"cannot clear {scope!r}: clear Local, Global or Workflow.Outputs")
        if scope == "Workflow.Outputs":
            self.data["Workflow"]["Outputs"] = {}
        else:
            self.data[scope] = {}

    def set_agent(self, answer: dict[str, Any]) -> None:
        """Set the `Agent.` scope: the last agent's answer (done by the runtime only)."""
        self.data["Agent"] = copy.deepcopy(answer)

    def set_system(self, key: str, value: Any) -> None:
        """Set a `System.` value (done by the runtime only). The conversation-level
        values follow: `System.Conversation.Id` with `System.ConversationId`, and
        `System.LastMessageText` with `System.LastMessage`."""
        system = self.data["System"]
        system[key] = copy.deepcopy(value)
        if key == "ConversationId":
            system["Conversation"] = {**(system.get("Conversation") or {}), "Id": value}
        elif key == "LastMessage" and isinstance(value, dict):
            system["LastMessageText"] = value.get("Text")
            system["LastMessageId"] = value.get("Id")

    @property
    def outputs(self) -> dict[str, Any]:
        return dict(self.data["Workflow"]["Outputs"])
