"""Providers that have nothing to do after a run inherit `BaseContextProvider`'s
`on_invoked` instead of writing out their own empty one."""

from __future__ import annotations

import ast
from pathlib import Path

from raf.context.compression import CompressionProvider
from raf.context.skills import AgentSkillsProvider
from raf.context.workspace import WorkspaceContextProvider
from raf.core.context import BaseContextProvider
from tests.import_graph import parsed

SRC = Path(__file__).resolve().parents[2] / "src" / "raf"


def _does_nothing(function: ast.AsyncFunctionDef | ast.FunctionDef) -> bool:
    body = [
        b
        for b in function.body
        if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))
    ]
    return all(
        isinstance(b, ast.Pass)
        or (isinstance(b, ast.Return) and (b.value is None or ast.unparse(b.value) == "None"))
        for b in body
    )


def test_no_provider_outside_core_writes_an_on_invoked_that_does_nothing() -> None:
    empty = []
    for path in SRC.rglob("*.py"):
        if path == SRC / "core" / "context.py":
            continue  # the protocol and the base class themselves
        for node in ast.walk(parsed(path)):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if (
                    isinstance(item, ast.AsyncFunctionDef | ast.FunctionDef)
                    and item.name == "on_invoked"
                    and _does_nothing(item)
                ):
                    empty.append(f"{path.relative_to(SRC)}:{node.name}")
    assert empty == []


def test_the_providers_with_nothing_to_do_after_a_run_use_the_base_class() -> None:
    for cls in (WorkspaceContextProvider, AgentSkillsProvider, CompressionProvider):
        assert issubclass(cls, BaseContextProvider)
        assert cls.on_invoked is BaseContextProvider.on_invoked
