"""The variables of a declarative workflow run: scoped paths such as `Local.total`,
`System.LastMessage.Text` or `Workflow.Inputs.age`, held as plain JSON data."""

from __future__ import annotations

import copy
from typing import Any

from raf.core.errors import RafError

SCOPES = ("Local", "Global", "System", "Workflow", "inputs", "ThisRecord", "ThisItem")
"""Names a path may start with; `inputs` is `Workflow.Inputs`; `ThisRecord` (or
`ThisItem`) is the current record inside Filter, LookUp, CountIf and ForAll."""
WRITABLE = ("Local", "Global", "Workflow")


class VariableError(RafError):
    """A variable path that names no scope, or one a workflow may not write."""


def split_path(path: str) -> tuple[str, ...]:
    """`Local.a.b` as its parts; `inputs.x` is read as `Workflow.Inputs.x`."""
    parts = tuple(p for p in path.strip().split("."))
    if any(not p for p in parts):
        raise VariableError(f"{path!r} is not a variable path (use Scope.name, e.g. Local.x)")
    if parts[0] == "inputs":
        return ("Workflow", "Inputs", *parts[1:])
    return parts


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
        if isinstance(parts, str):
            parts = split_path(parts)
        elif parts and parts[0] == "inputs":
            parts = ("Workflow", "Inputs", *parts[1:])
        current: Any = self.data
        for part in parts:
            if isinstance(current, dict):
                current = current.get(part)
            elif isinstance(current, list) and part.isdigit():
                index = int(part)
                current = current[index] if index < len(current) else None
            else:
                return None
        return copy.deepcopy(current)

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

    def set_system(self, key: str, value: Any) -> None:
        """Set a `System.` value (done by the runtime only)."""
        self.data["System"][key] = copy.deepcopy(value)

    @property
    def outputs(self) -> dict[str, Any]:
        return dict(self.data["Workflow"]["Outputs"])
