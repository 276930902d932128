"""Shared helpers of the workflow document tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raf.decl.workflow import DeclarativeExecutor, DeclWorkflowBuilder
from raf.workflow import Workflow, WorkflowRunResult

DATA = Path(__file__).resolve().parents[2] / "data" / "workflows"


def variables(workflow: Workflow) -> dict[str, Any]:
    """The variables of a declarative workflow's last run."""
    node = workflow.nodes[workflow.start]
    assert isinstance(node, DeclarativeExecutor)
    return node.variables


def build(name: str, **kwargs: Any) -> Workflow:
    builder = DeclWorkflowBuilder().from_file(DATA / name)
    for key, value in kwargs.items():
        getattr(builder, f"with_{key}")(value)
    return builder.build()


async def run(name: str, message: Any = "", **kwargs: Any) -> tuple[Workflow, WorkflowRunResult]:
    workflow = build(name, **kwargs)
    return workflow, await workflow.run(message)
