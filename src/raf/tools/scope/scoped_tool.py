"""The base of every workspace tool: argument validation, the per-call scope decision,
approval bookkeeping and running the file work off the event loop."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ValidationError

from raf.core.call_approval import was_approved
from raf.core.function_tool import describe_validation_error
from raf.core.model_tool import arguments_schema
from raf.core.tools import ToolContext, ToolResult
from raf.tools.scope.budget import CallBudget, result_size
from raf.tools.workspace import Access, OutsideScopeError, RuleAction, ScopePolicy, WorkspaceScope

_call_key: ContextVar[str] = ContextVar("raf_scoped_call_key", default="")


def call_key() -> str:
    """The idempotency key of the tool call `run` works for ("" when there is none)."""
    return _call_key.get()


@dataclass(frozen=True, kw_only=True, slots=True)
class FileLimits:
    """Caps that keep one call cheap and its result small."""

    max_read_bytes: int = 256_000
    max_read_lines: int = 2_000
    max_write_bytes: int = 10_000_000
    max_entries: int = 1_000
    max_matches: int = 200
    max_search_file_bytes: int = 2_000_000
    max_line_chars: int = 500
    max_seconds: float = 30.0
    """Time budget of one find_files / search_file walk; results so far are returned."""
    max_regex_seconds: float = 2.0
    """Time one regex may take over one file (pure-Python search), so that a pattern
    that backtracks without end cannot hang the run."""
    max_scan_bytes: int = 256 * 1024 * 1024
    """Most bytes read_file skips to reach start_line and inspect_file counts lines over
    (a sparse 40 GB file must not hold a call for minutes)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PathUse:
    """One path a call touches and how."""

    path: str
    access: Access
    follow_final: bool = True


def os_message(exc: OSError) -> str:
    """A short message for the model from an OS error."""
    text = exc.strerror or str(exc)
    if exc.filename is not None and str(exc.filename) not in text:
        text = f"{text}: {exc.filename}"
    return text


MAX_CANDIDATES = 200
"""A workspace with more paths than this offers none: the model writes the path itself."""
_SKIPPED_FOLDERS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv"})


def existing_paths(scope: WorkspaceScope, kind: str) -> list[str]:
    """Paths under the scope's root, relative to it, that a tool may read without a
    person: folders (`.` first) for kind "folder", files for "file", both for "any".
    Hidden and tool folders (`.git`, `node_modules`, ...) are not walked; empty when
    there are more than `MAX_CANDIDATES`."""
    root = scope.real_root
    out: list[str] = ["."] if kind in ("folder", "any") else []
    seen = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_FOLDERS and not d.startswith("."))
        rel = os.path.relpath(folder, root)
        names = [(d, True) for d in dirs] + [(f, False) for f in sorted(files)]
        for name, is_dir in names:
            seen += 1
            if seen > MAX_CANDIDATES:
                return []
            if (is_dir and kind == "file") or (not is_dir and kind == "folder"):
                continue
            path = name if rel == "." else f"{rel}/{name}"
            try:
                decision = scope.decide(path, Access.READ)
            except (OSError, ValueError):
                continue
            if decision.action is RuleAction.ALLOW:
                out.append(path)
    return out


class ScopedTool:
    """A tool bound to a WorkspaceScope (or, unscoped, to the current directory under
    the default APPROVE_OUTSIDE policy)."""

    name: str = ""
    description: str = ""
    kind: str = "file"
    Arguments: ClassVar[type[BaseModel]]
    path_candidates: ClassVar[str | None] = None
    """What the `path` argument names, for `argument_candidates`: "file", "folder" or
    "any" (folders and files); None: the tool offers no candidates (a path to create)."""

    def __init__(
        self,
        scope: WorkspaceScope | None = None,
        *,
        limits: FileLimits | None = None,
        budget: CallBudget | None = None,
    ):
        self.scope = scope
        self.limits = limits or FileLimits()
        self.budget = budget or CallBudget(wall_s=max(60.0, 2 * self.limits.max_seconds))
        """What one call may spend (wall time and result size are enforced in `invoke`;
        memory by the per-file caps in `limits`)."""

    def create_scoped(self, scope: WorkspaceScope) -> Self:
        """A copy of this tool bound to `scope`."""
        return type(self)(scope, limits=self.limits, budget=self.budget)

    @property
    def parameters(self) -> dict[str, Any]:
        return arguments_schema(self.Arguments)

    def argument_candidates(self) -> dict[str, list[Any]]:
        """The paths that exist in the scope for the `path` argument (see
        `path_candidates`), relative to the root, read-allowed without approval; empty
        when the tool offers none or the workspace holds more than `MAX_CANDIDATES`."""
        if self.path_candidates is None or self.scope is None:
            return {}
        found = existing_paths(self.scope, self.path_candidates)
        return {"path": found} if found else {}

    def effective_scope(self) -> WorkspaceScope:
        return self.scope if self.scope is not None else WorkspaceScope(Path.cwd())

    @property
    def requires_approval(self) -> bool:
        scope = self.scope
        if scope is None:
            return True
        return scope.policy is ScopePolicy.APPROVE_OUTSIDE or scope.has_approval_rules

    def uses(self, args: Any) -> list[PathUse]:
        """The paths a call touches; subclasses list theirs."""
        return []

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        """True only when some path of this call leaves the root (or hits an approve rule)."""
        try:
            args = self.Arguments.model_validate(arguments)
        except ValidationError:
            return False  # invoke answers with the validation error and touches nothing
        try:
            scope = self.effective_scope()
            for use in self.uses(args):
                decision = scope.decide(use.path, use.access, follow_final=use.follow_final)
                if decision.action is RuleAction.APPROVE:
                    return True
        except (OSError, ValueError):
            return True  # cannot judge the path: let a human decide (invoke re-checks)
        return False

    def approval_reason(self, arguments: Mapping[str, Any]) -> str | None:
        """Why this call waits for a person: which path, which access, under which policy
        or rule of which workspace (None when it does not wait)."""
        try:
            args = self.Arguments.model_validate(arguments)
            scope = self.effective_scope()
            for use in self.uses(args):
                decision = scope.decide(use.path, use.access, follow_final=use.follow_final)
                if decision.action is RuleAction.APPROVE:
                    return (
                        f"{use.access.value} of {str(use.path)!r} in workspace "
                        f"{scope.name!r} (policy {scope.policy.value}): {decision.reason}"
                    )
        except (ValidationError, OSError, ValueError) as exc:
            return f"raf cannot judge where this call's paths lead ({exc}), so a person decides"
        return None

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        try:
            args = self.Arguments.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult.fail(describe_validation_error(self.name, exc))
        approved = was_approved(context, self.name, arguments)
        scope = self.effective_scope()
        budget = self.budget
        token = _call_key.set(context.idempotency_key)  # the worker thread copies it
        try:
            value = await asyncio.wait_for(
                asyncio.to_thread(self.run, scope, args, approved), budget.wall_s
            )
        except TimeoutError:
            return ToolResult.fail(
                f"{self.name}: the call ran past its budget of {budget.wall_s:g}s; narrow it"
            )
        except OutsideScopeError as exc:
            return ToolResult.fail(str(exc))
        except OSError as exc:
            return ToolResult.fail(f"{self.name}: {os_message(exc)}")
        except ValueError as exc:
            return ToolResult.fail(f"{self.name}: {exc}")
        finally:
            _call_key.reset(token)
        size = result_size(value)
        if size > budget.output_bytes:
            return ToolResult.fail(
                f"{self.name}: the result is {size} bytes, over the call's budget of "
                f"{budget.output_bytes}; ask for less (a line range, a narrower pattern)"
            )
        return ToolResult.ok(value)

    def run(self, scope: WorkspaceScope, args: Any, approved: bool) -> Any:
        """The synchronous work, in a worker thread."""
        raise OSError(38, f"{self.name} has no implementation")

    def shown(self, scope: WorkspaceScope, path: Path) -> str:
        """A path as the model should see it: relative inside the root, absolute outside."""
        root = str(scope.real_root)
        text = str(path)
        if text == root:
            return "."
        if text.startswith(root.rstrip("/") + "/"):
            return os.path.relpath(text, root)
        return text

    def __repr__(self) -> str:
        where = f" scope={self.scope!r}" if self.scope is not None else " unscoped"
        return f"<{type(self).__name__} {self.name!r}{where}>"
